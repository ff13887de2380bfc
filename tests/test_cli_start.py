"""How ``python -m mpt`` and ``python -m mpt.bench`` start and stop (issue 30): Ctrl-C while the modules are still
being imported, the folder that holds a clone named ``mpt``, and one rule for a reader that goes away (``| head``).
Run as a user runs them, in subprocesses."""
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

import mpt

ROOT = pathlib.Path(mpt.__file__).resolve().parent.parent

# A sitecustomize that makes the import of one module (SLOW_MODULE) hang after saying so (SLOW_READY): the
# window in which Ctrl-C lands while the command's modules are still loading, made as long as the test needs.
SLOW_IMPORT = """\
import os, sys, time

class _SlowImport:
    def find_spec(self, name, path=None, target=None):
        if name == os.environ.get("SLOW_MODULE"):
            open(os.environ["SLOW_READY"], "w").close()
            time.sleep(60)
        return None

sys.meta_path.insert(0, _SlowImport())
"""


def _env(**extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (extra.pop("first", None), str(ROOT),
                                                    env.get("PYTHONPATH", "")) if p)
    env.update(extra)
    return env


@pytest.mark.skipif(sys.version_info < (3, 10), reason="sys.orig_argv (Python 3.10+) tells a -m start apart")
@pytest.mark.parametrize("argv, slow_module", [
    (["-m", "mpt", "root", "--help"], "mpt.ethereum.node"),      # inside `import mpt` (the package itself)
    (["-m", "mpt", "root", "--help"], "mpt.cli"),                # mpt/__main__.py's own imports
    (["-m", "mpt", "iavl", "import", "--help"], "mpt.iavl.cli"),  # the command modules
    (["-m", "mpt.bench", "--list"], "mpt.bench.cases"),          # the benchmark cases
])
def test_ctrl_c_while_importing_is_one_line_and_130(tmp_path, argv, slow_module):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SLOW_IMPORT)
    ready = tmp_path / "ready"
    p = subprocess.Popen([sys.executable, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=_env(first=str(site), SLOW_MODULE=slow_module, SLOW_READY=str(ready)))
    try:
        deadline = time.monotonic() + 60
        while not ready.exists() and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert ready.exists(), "the command never imported %s: %s" % (slow_module, p.communicate()[1])
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert (p.returncode, err.decode(), out) == (130, "interrupted\n", b"")


def test_startup_guard_only_for_python_dash_m_mpt(tmp_path):
    # A script (or a test run) that imports mpt keeps Python's own Ctrl-C: KeyboardInterrupt.
    code = "import signal, mpt; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=60)
    assert r.stdout == "True\n", r.stderr
    # So does a command once it runs: mpt.cli.entry_point hands SIGINT back before the work starts.
    from mpt import _startup

    assert _startup._module_run_with_dash_m() is None       # pytest was not started as python -m mpt
    # Other modules of the package run with -m (the bench's peak-RSS child) keep Python's Ctrl-C as well.
    assert "mpt.bench.rss" not in _startup.ENTRY_POINTS and {"mpt", "mpt.bench"} <= set(_startup.ENTRY_POINTS)


def _clone_parent(tmp_path):
    """A folder holding a stand-in clone named mpt (the checkout, linked): where `git clone .../mpt` leaves it."""
    parent = tmp_path / "parent"
    parent.mkdir()
    (parent / "mpt").symlink_to(ROOT, target_is_directory=True)
    return parent


def _installed_outside_pythonpath():
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run([sys.executable, "-c", "import mpt; print(mpt.__file__)"], cwd="/", env=env,
                       capture_output=True, text=True, timeout=60)
    return env if r.returncode == 0 else None


@pytest.mark.parametrize("argv, expect", [
    (["-m", "mpt", "root", "-", "--format", "alloc"], "0x" + mpt.EMPTY_ROOT.hex() + "\n"),
    (["-m", "mpt.bench", "-b", "MerkleVerify", "--list"], "MerkleVerify"),
])
def test_commands_work_from_the_folder_holding_a_clone_named_mpt(tmp_path, argv, expect):
    """`pip install -e .` puts the clone on sys.path (pyproject's package-dir), where its package wins over the
    clone's own folder, which Python would otherwise import as an empty namespace package."""
    env = _installed_outside_pythonpath()
    if env is None:
        pytest.skip("mpt is not installed (only importable through PYTHONPATH)")
    r = subprocess.run([sys.executable, *argv], cwd=_clone_parent(tmp_path), env=env, input="{}",
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert r.stdout.startswith(expect) or expect in r.stdout, r.stdout


def test_editable_install_puts_the_clone_on_sys_path():
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '\n[tool.setuptools]\n' in pyproject and '\npackage-dir = { "" = "." }\n' in pyproject


@pytest.mark.parametrize("module", ["mpt", "mpt.bench"])
def test_a_shadowed_package_is_one_line(tmp_path, module):
    """An install that still lets the folder win (an editable install made before the fix) gets one line saying
    what to do, not an ImportError traceback."""
    shadow = tmp_path / "mpt"
    shadow.mkdir()
    code = ("import runpy, sys, types\n"
            "ns = types.ModuleType('mpt'); ns.__path__ = [%r, %r]; sys.modules['mpt'] = ns\n"
            "runpy.run_module(%r + '.__main__', run_name='__main__', alter_sys=True)\n"
            % (str(shadow), str(ROOT / "mpt"), module))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=60)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    (line,) = r.stderr.splitlines()
    assert line.startswith("python -m %s: error: the folder %s (no __init__.py) hides the installed mpt package"
                           % (module, shadow)), line
    assert "pip install -e ." in line


@pytest.mark.parametrize("module", ["mpt.bench", "mpt"])
def test_a_closed_pipe_is_quiet_and_exit_status_1_in_both_commands(module):
    """One rule for `| head`: when the reader has gone away before the command writes, nothing on stderr and
    exit status 1, for python -m mpt (mpt.cli.run_command) and python -m mpt.bench alike (mpt.cli.entry_point)."""
    argv = ["--list"] if module == "mpt.bench" else ["root", "-", "--format", "pairs-jsonl"]
    p = subprocess.Popen([sys.executable, "-m", module, *argv], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=_env())
    p.stdout.close()
    p.stdin.write(b'{"key": "0x01", "value": "0x02"}\n')
    p.stdin.close()
    err = p.stderr.read().decode()
    p.wait(timeout=60)
    assert err == "" and p.returncode == 1, err
