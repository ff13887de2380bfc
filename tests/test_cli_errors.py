"""``python -m mpt``: every user mistake is one ``error:`` line on stderr and an exit status (2 for usage, 1 for
failures, 130 for Ctrl-C), never a traceback; run as a user runs it, in a subprocess."""
import argparse
import importlib
import os
import pathlib
import signal
import subprocess
import sys
import threading
import time

import pytest

import mpt
from mpt import EMPTY_ROOT
from mpt.cli import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_USAGE, CommandError, UsageError, run_command
from mpt.errors import MptError, NodeDecodeError

PKG_PARENT = str(pathlib.Path(mpt.__file__).resolve().parent.parent)


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = PKG_PARENT + os.pathsep + env.get("PYTHONPATH", "")
    return env


def run_cli(*args, input=None):
    return subprocess.run([sys.executable, "-m", "mpt", *args], capture_output=True, text=True, env=_env(),
                          timeout=120, input=input)


def assert_one_error_line(r, code, *fragments):
    assert r.returncode == code, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("python -m mpt "), r.stderr
    assert ": error: " in lines[0]
    for fragment in fragments:
        assert fragment in lines[0]


# ---------------------------------------------------------------------------------------------------- the framework

def test_every_command_module_has_add_parser_and_run():
    from mpt.__main__ import COMMANDS, build_parser

    for name in COMMANDS:
        module = importlib.import_module(name)
        assert callable(module.add_parser) and callable(module.run), name
    build_parser()                              # every module registers without clashing


@pytest.mark.parametrize("raised, code, line", [
    (UsageError("--x must be 1"), EXIT_USAGE, "prog: error: --x must be 1"),
    (CommandError("mismatch"), EXIT_FAILURE, "prog: error: mismatch"),
    (CommandError("custom", 3), 3, "prog: error: custom"),
    (NodeDecodeError("bad node"), EXIT_FAILURE, "prog: error: bad node"),      # any mpt.errors exception
    (PermissionError(13, "Permission denied", "/x/y"), EXIT_FAILURE, "prog: error: /x/y: Permission denied"),
    (IsADirectoryError(21, "Is a directory", "/tmp"), EXIT_FAILURE, "prog: error: /tmp: Is a directory"),
    (FileNotFoundError(2, "No such file or directory", "f.json"), EXIT_FAILURE,
     "prog: error: f.json: No such file or directory"),
])
def test_run_command_turns_exceptions_into_one_line(capsys, raised, code, line):
    def command(args):
        raise raised
    assert run_command("prog", command, argparse.Namespace()) == code
    captured = capsys.readouterr()
    assert captured.err == line + "\n" and captured.out == ""


def test_run_command_passes_the_exit_status(capsys):
    assert run_command("prog", lambda args: None, None) == 0
    assert run_command("prog", lambda args: 1, None) == 1
    assert issubclass(UsageError, CommandError) and not issubclass(CommandError, MptError)


def test_run_command_reports_interrupt(capsys):
    def command(args):
        raise KeyboardInterrupt
    assert run_command("prog", command, None) == EXIT_INTERRUPTED == 130
    assert capsys.readouterr().err == "interrupted\n"


def test_unexpected_errors_still_show_their_traceback():
    # A bug is not a user mistake: it must stay visible.
    def command(args):
        raise AssertionError("bug")
    with pytest.raises(AssertionError):
        run_command("prog", command, None)


# ---------------------------------------------------------------------------------------------------- root

def test_root_of_a_directory_is_a_usage_error(tmp_path):
    r = run_cli("root", str(tmp_path), "--format", "pairs-jsonl")
    assert_one_error_line(r, 2, "is a directory")


@pytest.mark.parametrize("value, fragment", [
    ("99999999999999999999999", "out of range"),
    ("100000", "out of range"),
    ("1.5", "not a whole number"),
    ("two", "not a whole number"),
    ("+2", "not a whole number"),
    ("1_0", "not a whole number"),
    ("-1", "out of range"),
    ("0", "out of range"),
])
def test_root_workers_out_of_range(tmp_path, value, fragment):
    path = tmp_path / "pairs.jsonl"
    path.write_text('{"key": "0x01", "value": "0x02"}\n')
    r = run_cli("root", str(path), "--format", "pairs-jsonl", "--workers", value)
    assert_one_error_line(r, 2, "error: argument --workers: ", fragment)


@pytest.mark.parametrize("args, fragment", [
    (["root", "x", "--format", "csv"], "argument --format: invalid choice: 'csv'"),
    (["root", "x"], "the following arguments are required: --format"),
    (["root", "x", "--format", "alloc", "--memory-limit=-5M"], "'-5M' is negative"),
    (["root", "x", "--format", "alloc", "--memory-limit", "lots"], "'lots' is not a size"),
    (["root", "x", "--format", "alloc", "--memory-limit", "9" * 400 + "G"], "is too large a size"),
    (["inspect"], "the following arguments are required: --db"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
])
def test_argument_errors_are_one_line(args, fragment):
    r = run_cli(*args)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.count("\n") == 1 and ": error: " in r.stderr and fragment in r.stderr, r.stderr
    assert "usage:" not in r.stderr


@pytest.mark.parametrize("content", ["", "\n\n"])
def test_root_of_an_empty_input_says_so(tmp_path, content):
    path = tmp_path / "pairs.jsonl"
    path.write_text(content)
    r = run_cli("root", str(path), "--format", "pairs-jsonl")
    assert r.returncode == 0 and r.stdout == "0x%s\n" % EMPTY_ROOT.hex()
    assert r.stderr == "note: %s holds no key/value pairs; that is the empty trie's root\n" % path
    r = run_cli("root", "-", "--format", "alloc", input="{}")
    assert r.returncode == 0 and r.stdout == "0x%s\n" % EMPTY_ROOT.hex()
    assert r.stderr == "note: stdin holds no accounts; that is the empty trie's root\n"


def test_root_of_a_nonempty_input_adds_no_note(tmp_path):
    path = tmp_path / "pairs.jsonl"
    path.write_text('{"key": "0x01", "value": "0x02"}\n')
    r = run_cli("root", str(path), "--format", "pairs-jsonl")
    assert r.returncode == 0 and r.stderr == ""


@pytest.mark.parametrize("fmt", ["alloc", "geth-dump", "pairs-jsonl"])
@pytest.mark.parametrize("text", ["[" * 2000 + "]" * 2000, '{"a":' * 2000 + "1" + "}" * 2000])
def test_root_of_json_nested_thousands_deep_is_one_line(tmp_path, fmt, text):
    path = tmp_path / "deep.json"
    path.write_text(text + "\n")
    assert_one_error_line(run_cli("root", str(path), "--format", fmt), 2, "deep.json: JSON nested too deeply")


def test_root_reads_gzip_and_names_damaged_gzip(tmp_path):
    import gzip

    pairs = '{"key": "0x01", "value": "0x02"}\n'
    plain = run_cli("root", "-", "--format", "pairs-jsonl", input=pairs)
    assert plain.returncode == 0
    path = tmp_path / "pairs.jsonl.gz"
    path.write_bytes(gzip.compress(pairs.encode()))
    r = run_cli("root", str(path), "--format", "pairs-jsonl")
    assert (r.returncode, r.stdout, r.stderr) == (0, plain.stdout, "")
    alloc = tmp_path / "genesis.json.gz"
    alloc.write_bytes(gzip.compress(b'{"alloc": {}}'))
    r = run_cli("root", str(alloc), "--format", "alloc")
    assert r.returncode == 0 and r.stdout == "0x%s\n" % EMPTY_ROOT.hex()
    cut = tmp_path / "cut.gz"
    cut.write_bytes(gzip.compress(pairs.encode() * 1000)[:40])
    assert_one_error_line(run_cli("root", str(cut), "--format", "pairs-jsonl"), 2, "cut.gz: damaged gzip data")


def test_ctrl_c_in_root_prints_interrupted_and_exits_130():
    # A stream that keeps coming: once the command has read a megabyte it is busy building, and SIGINT lands
    # in the middle of the work, as Ctrl-C does.
    p = subprocess.Popen([sys.executable, "-m", "mpt", "root", "-", "--format", "pairs-jsonl", "--no-progress"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
    written = [0]

    def feed():
        i = 0
        try:
            while True:
                block = "".join('{"key": "0x%064x", "value": "0x%08x"}\n' % (i + j, i + j) for j in range(1000))
                p.stdin.write(block.encode())
                written[0] += len(block)
                i += 1000
        except (BrokenPipeError, ValueError, OSError):
            pass

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    deadline = time.monotonic() + 60
    while written[0] < (1 << 20) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert written[0] >= (1 << 20), "the command did not read its input"
    p.send_signal(signal.SIGINT)
    try:
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 130, err
    assert err.decode() == "interrupted\n" and out == b""


# ---------------------------------------------------------------------------------------------------- inspect

def test_inspect_json_into_a_closed_pipe_is_quiet(tmp_path):
    pytest.importorskip("lmdb")
    from mpt import Trie
    from mpt.db import LMDBStore

    path = tmp_path / "state.lmdb"
    with LMDBStore(path) as db:
        t = Trie(db)
        for i in range(100):
            t[b"key %d" % i] = b"value %d" % i
        db.set_head(t.commit())
    # The reader goes away before the command writes (what `| head` does once it has its lines).
    p = subprocess.Popen([sys.executable, "-m", "mpt", "inspect", "--db", str(path), "--json"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
    p.stdout.close()
    err = p.stderr.read().decode()
    p.wait(timeout=60)
    assert err == "" and p.returncode == 1


def test_inspect_head_through_a_shell_pipe(tmp_path):
    pytest.importorskip("lmdb")
    from mpt import Trie
    from mpt.db import LMDBStore

    path = tmp_path / "state.lmdb"
    with LMDBStore(path) as db:
        t = Trie(db)
        t[b"dog"] = b"puppy"
        db.set_head(t.commit())
    cmd = "%s -m mpt inspect --db %s --json | head -n 1" % (sys.executable, path)
    r = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, env=_env(), timeout=60)
    assert r.stdout == "{\n" and r.stderr == ""


def test_inspect_usage_errors_are_one_line(tmp_path):
    r = run_cli("inspect", "--db", str(tmp_path / "nothing"))
    assert_one_error_line(r, 2, "no store at", "an LMDB store", "a LevelDB directory")
    r = run_cli("inspect", "--db", str(tmp_path), "--root", "zz")
    assert_one_error_line(r, 2, "--root 'zz' is not hex")
