"""Ctrl-C while ``python -m mpt`` or ``python -m mpt.bench`` is still starting: one line, exit status 130.

Python imports this package before it runs the command's ``__main__`` module, so a KeyboardInterrupt raised while
the compiled modules load would end in a traceback that no ``try`` of the command can catch. When (and only
when) the interpreter was started as one of those two commands and is still locating its module, :func:`install`
points SIGINT at a handler that prints ``interrupted`` and exits with status 130; the command's entry point
(``mpt.cli.entry_point``) calls :func:`started` inside its ``try`` block, which gives SIGINT back to Python's
KeyboardInterrupt. An interpreter started any other way (a script, a test run, ``python -m mpt.bench.rss``) never
sees the handler.
"""
import os
import signal
import sys

EXIT_INTERRUPTED = 130      # 128 + SIGINT, as mpt.cli.EXIT_INTERRUPTED

# The commands whose entry point (mpt.cli.entry_point) calls started(): any other module keeps Python's Ctrl-C.
ENTRY_POINTS = ("mpt", "mpt.__main__", "mpt.bench", "mpt.bench.__main__")


def _interrupted(signum, frame):
    try:
        os.write(2, b"interrupted\n")
    except OSError:
        pass
    os._exit(EXIT_INTERRUPTED)


def _module_run_with_dash_m():
    """The module name of ``python ... -m NAME`` (None for any other start)."""
    argv = getattr(sys, "orig_argv", None)       # Python 3.10+
    if not argv or sys.argv[:1] != ["-m"]:       # sys.argv[0] is "-m" only while -m's module is being located
        return None
    for i, arg in enumerate(argv[1:], 1):
        if arg == "-m":
            return argv[i + 1] if i + 1 < len(argv) else None
        if arg.startswith("-m") and not arg.startswith("--"):
            return arg[2:]
    return None


def install():
    """Called first thing by ``mpt/__init__.py``: quiet Ctrl-C while ``python -m mpt`` or ``python -m mpt.bench``
    starts."""
    if _module_run_with_dash_m() not in ENTRY_POINTS:
        return
    try:
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:   # not one the user chose
            signal.signal(signal.SIGINT, _interrupted)
    except (ValueError, OSError):       # not the main thread: leave SIGINT alone
        pass


def started():
    """The command's ``try`` block is running: Ctrl-C raises KeyboardInterrupt again, which the command reports."""
    try:
        if signal.getsignal(signal.SIGINT) is _interrupted:
            signal.signal(signal.SIGINT, signal.default_int_handler)
    except (ValueError, OSError):
        pass
