"""The spec's transition tool with and without mpt.compat.execution_specs: the same output files, byte for byte.

Inputs: tests/data/execution_specs_t8n (transfers, contract creation with storage, self-destruct, storage writes
and withdrawals; PROVENANCE.md there). Skipped when the ``spec`` extra (execution-specs) is not installed.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ethereum_spec_tools.evm_tools",
                    reason='execution-specs not installed: pip install "mpt-engine[spec]"')

from mpt.compat import execution_specs as es  # noqa: E402

DATA = Path(__file__).parent / "data" / "execution_specs_t8n"
FORKS = {"Shanghai": "env_shanghai.json", "Cancun": "env_cancun.json", "Prague": "env_cancun.json",
         "Osaka": "env_cancun.json"}
OUTPUTS = ("result.json", "alloc.json", "body.rlp")


def t8n_args(fork, out, *extra):
    out.mkdir(parents=True, exist_ok=True)
    return ["t8n", "--input.alloc", str(DATA / "alloc.json"), "--input.env", str(DATA / FORKS[fork]),
            "--input.txs", str(DATA / "txs.json"), "--state.fork", fork, "--output.basedir", str(out),
            "--output.result", "result.json", "--output.alloc", "alloc.json", "--output.body", "body.rlp", *extra]


def run_in_process(args):
    from ethereum_spec_tools.evm_tools import main

    assert main(args) == 0


def outputs(folder):
    return {name: (folder / name).read_bytes() for name in OUTPUTS}


@pytest.fixture
def unpatched():
    was = es.installed()
    es.uninstall()
    yield
    if was:
        es.install()


@pytest.mark.parametrize("fork", sorted(FORKS))
def test_t8n_outputs_identical_with_and_without_the_patch(fork, tmp_path, unpatched):
    run_in_process(t8n_args(fork, tmp_path / "spec"))
    with es.patched():
        before = es.stats()
        run_in_process(t8n_args(fork, tmp_path / "mpt"))
        after = es.stats()
    name = "ethereum.forks." + fork.lower()
    assert after[name]["full_builds"] > before[name]["full_builds"]          # the roots were mpt's
    assert after[name]["fallbacks"] == before[name]["fallbacks"]
    spec, ours = outputs(tmp_path / "spec"), outputs(tmp_path / "mpt")
    assert spec == ours
    assert b'"rejected": []' in spec["result.json"]
    assert b"0xec0e71ad0a90ffe1909d27dac207f7680abba42d" in spec["alloc.json"]     # the created contract


def test_t8n_command_line(tmp_path, unpatched):
    """`python -m mpt.compat.execution_specs t8n ...` writes what the spec's own t8n writes."""
    run_in_process(t8n_args("Cancun", tmp_path / "spec"))
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parent.parent))
    done = subprocess.run([sys.executable, "-m", "mpt.compat.execution_specs", "--mpt-stats",
                           *t8n_args("Cancun", tmp_path / "mpt")], capture_output=True, text=True, env=env,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert '"ethereum.forks.cancun": {"full_builds": ' in done.stderr
    assert outputs(tmp_path / "spec") == outputs(tmp_path / "mpt")


@pytest.mark.slow
def test_t8n_cloned_fork(tmp_path, unpatched):
    """--input.blobParams makes the t8n clone the fork into a temporary package: the clone is patched too."""
    import json

    params = tmp_path / "blob.json"
    params.write_text(json.dumps({"target": 3, "max": 6, "baseFeeUpdateFraction": 3338477}))
    run_in_process(t8n_args("Cancun", tmp_path / "spec", "--input.blobParams", str(params)))
    with es.patched():
        before = set(es.patched_forks())
        run_in_process(t8n_args("Cancun", tmp_path / "mpt", "--input.blobParams", str(params)))
        clones = set(es.patched_forks()) - before
    assert any("cancun_clone" in c for c in clones), clones
    assert outputs(tmp_path / "spec") == outputs(tmp_path / "mpt")
