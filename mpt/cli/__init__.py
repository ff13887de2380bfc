"""What every ``python -m mpt`` command shares: exit statuses and the one place that turns errors into them.

A command is a module with two functions, listed in ``mpt.__main__.COMMANDS``:

- ``add_parser(subparsers)`` adds its ``argparse`` sub-parser and returns it;
- ``run(args)`` does the work and returns the exit status (``None`` counts as 0).

``run`` reports a problem by raising; :func:`run_command` turns the exception into one ``error:`` line on stderr
and an exit status, so no user mistake ends in a traceback:

- :class:`UsageError`: bad arguments, no such input, an input the command cannot take: exit status 2
  (``EXIT_USAGE``, as argparse's own errors, which :class:`ArgumentParser` also keeps to one line);
- :class:`CommandError` ``(message, code)``: exit status ``code`` (1 unless given);
- any :class:`mpt.errors.MptError` (corrupt data, missing nodes, a full disk): 1 (``EXIT_FAILURE``);
- ``OSError`` (an unreadable file, a directory where a file belongs, permission denied): 1, the message names
  the file;
- ``KeyboardInterrupt`` (Ctrl-C): 130, ``interrupted`` on stderr (also while the modules are still being
  imported: mpt/_startup.py);
- ``BrokenPipeError`` on stdout (the reader went away, as ``| head`` does): 1, nothing printed. ``python -m
  mpt.bench`` follows the same rule (:func:`entry_point` serves both). Output that fits in the pipe's buffer
  before the reader leaves is never noticed by the writer: exit status 0.

Anything else is a bug and keeps its traceback.
"""
import argparse
import gzip
import io
import os
import sys
import zlib

from mpt._startup import started
from mpt.errors import MptError


EXIT_OK = 0
EXIT_FAILURE = 1        # the command ran and failed: damaged trie, mismatching root, unwritable output
EXIT_USAGE = 2          # bad arguments or an input the command cannot take (argparse uses 2 as well)
EXIT_INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for a command stopped by Ctrl-C


class CommandError(Exception):
    """A command's failure, reported as ``error: <message>`` with exit status ``exit_code``."""

    exit_code = EXIT_FAILURE

    def __init__(self, message, exit_code=None):
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class UsageError(CommandError):
    """A mistake in the command line (or in what it names): exit status 2."""

    exit_code = EXIT_USAGE


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser, with a usage error reported like every other error: one line without the usage text
    (``--help`` shows it), exit status 2. The sub-parsers of ``add_subparsers`` are of this class too."""

    def error(self, message):
        self.exit(EXIT_USAGE, "%s: error: %s\n" % (self.prog, message))


def describe_os_error(e):
    """One line for an OSError: ``<file>: <reason>`` (``Is a directory``, ``Permission denied``, ...)."""
    reason = e.strerror or str(e)
    if e.filename is not None:
        return "%s: %s" % (os.fsdecode(e.filename), reason)
    return reason


def error(prog, message):
    """Print ``<prog>: error: <message>`` on stderr, as argparse does for usage errors."""
    try:
        print("%s: error: %s" % (prog, message), file=sys.stderr)
        sys.stderr.flush()
    except (OSError, ValueError):        # stderr closed or gone: the exit status still tells
        pass


def _silence_stdout():
    # Python flushes stdout again at exit; pointing it at devnull keeps that flush from raising a second
    # BrokenPipeError (https://docs.python.org/3/library/signal.html#note-on-sigpipe).
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def flush_stdout():
    """Flush stdout; when the reader has gone away, silence it (no second error at exit) and return False."""
    try:
        sys.stdout.flush()
        return True
    except BrokenPipeError:
        _silence_stdout()
        return False


def shadowed_package():
    """The folder that hides the mpt package when ``import mpt`` found a namespace folder (a clone named ``mpt``
    in the current directory, seen through an old editable install), else None."""
    package = sys.modules.get("mpt")
    if package is None or getattr(package, "__file__", None) is not None:
        return None
    paths = list(getattr(package, "__path__", []))
    return paths[0] if paths else "mpt"


def exit_if_shadowed(prog):
    """Exit with one line when ``mpt`` was imported as a namespace folder (see :func:`shadowed_package`): the
    ``__main__`` modules call it before they import anything that needs the package itself."""
    folder = shadowed_package()
    if folder is not None:
        error(prog, "the folder %s (no __init__.py) hides the installed mpt package: run from another folder, or "
                    "reinstall from the clone with pip install -e . (the current install puts the clone first on "
                    "sys.path)" % folder)
        sys.exit(EXIT_FAILURE)


def entry_point(prog, main, argv=None):
    """Run ``main(argv)`` as a ``python -m`` command and return its exit status: the one place where both
    ``python -m mpt`` and ``python -m mpt.bench`` handle Ctrl-C and a closed stdout."""
    try:
        started()           # from here on Ctrl-C raises KeyboardInterrupt, reported below
        return _exit_status(main(argv))
    except SystemExit as e:         # argparse after --help, or a usage error
        if e.code in (0, None) and not flush_stdout():
            return EXIT_FAILURE
        raise
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_FAILURE
    except KeyboardInterrupt:
        return _interrupted()


def _exit_status(code):
    """A command's exit status once its output is out: a closed pipe shows up when stdout is flushed at the
    latest."""
    if not flush_stdout():
        return EXIT_FAILURE
    return EXIT_OK if code is None else code


def _interrupted():
    """Ctrl-C: one line on stderr (if it is still there) and the shell's status for it."""
    try:
        print("interrupted", file=sys.stderr)
    except (OSError, ValueError):
        pass
    return EXIT_INTERRUPTED


GZIP_MAGIC = b"\x1f\x8b"


def open_text_input(path):
    """A UTF-8 text file for reading path ('-': stdin), decompressed on the fly when it is gzip (recognised by its
    first two bytes, whatever its name). Close it when done (closing the one for stdin leaves stdin open).
    Raises OSError as open() does."""
    if path == "-":
        raw = sys.stdin.buffer
        if hasattr(raw, "peek") and raw.peek(2)[:2] == GZIP_MAGIC:
            return io.TextIOWrapper(gzip.GzipFile(fileobj=raw, mode="rb"), encoding="utf-8")
        return _Unclosed(sys.stdin)
    with open(path, "rb") as f:
        head = f.read(2)
    if head == GZIP_MAGIC:
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, "r", encoding="utf-8")


class _Unclosed:
    """stdin, with a close() that leaves it open."""

    def __init__(self, stream):
        self._stream = stream

    def __iter__(self):
        return iter(self._stream)

    def __getattr__(self, name):
        return getattr(self._stream, name)

    def close(self):
        pass


def is_gzip_error(e):
    """Whether e is what a damaged or truncated gzip stream raises while it is read."""
    return isinstance(e, (gzip.BadGzipFile, EOFError, zlib.error))


def run_command(prog, run, args):
    """Call ``run(args)`` and return its exit status, turning every expected exception into one."""
    try:
        return _exit_status(run(args))
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_FAILURE
    except KeyboardInterrupt:
        return _interrupted()
    except CommandError as e:
        error(prog, e)
        return e.exit_code
    except MptError as e:
        error(prog, e)
        return EXIT_FAILURE
    except OSError as e:
        error(prog, describe_os_error(e))
        return EXIT_FAILURE
