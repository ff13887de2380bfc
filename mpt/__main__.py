"""Command line: ``python -m mpt COMMAND ...``; ``python -m mpt --help`` lists the commands.

(Benchmarks have their own entry point: ``python -m mpt.bench``.)
"""
import importlib
import sys

from mpt.cli import ArgumentParser, entry_point, exit_if_shadowed, run_command

PROG = "python -m mpt"

if __name__ == "__main__":
    exit_if_shadowed(PROG)      # before the command modules need the package itself

# The command modules, in the order --help lists them. Each has add_parser(subparsers) -> the sub-parser and
# run(args) -> exit status; mpt.cli.run_command gives them all the same error handling. A new command is a new
# module and one line here.
COMMANDS = (
    "mpt.cli.inspect",
    "mpt.cli.root",
    "mpt.iavl.cli",
    "mpt.ics23.cli",
)


def build_parser():
    parser = ArgumentParser(
        prog=PROG,
        description="Tools for Merkle trees kept in an mpt node store or in input files.",
        epilog="Exit status: 0 on success, 1 when the command fails (damaged data, a write that failed), "
               "2 for bad arguments, 130 when interrupted.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMANDS:
        module = importlib.import_module(name)
        module.add_parser(sub).set_defaults(run=module.run)
    return parser


def main(argv=None):
    """Parse argv and run the command; Ctrl-C, a closed stdout and a shadowed package are handled around it by
    mpt.cli.entry_point (``python -m mpt``), the command's own errors by mpt.cli.run_command."""
    args = build_parser().parse_args(argv)
    return run_command("%s %s" % (PROG, args.command), args.run, args)


if __name__ == "__main__":
    sys.exit(entry_point(PROG, main))
