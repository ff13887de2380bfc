"""`python -m mpt.compat.execution_specs` without execution-specs: a one-line message naming the extra, exit 2
(no spec needed: an empty package named ``ethereum`` stands in front of any installed one)."""

import os
import subprocess
import sys
from pathlib import Path


def test_command_line_without_the_spec(tmp_path):
    (tmp_path / "ethereum").mkdir()
    (tmp_path / "ethereum" / "__init__.py").write_text("")
    root = Path(__file__).resolve().parent.parent
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(root)]))
    done = subprocess.run([sys.executable, "-m", "mpt.compat.execution_specs", "t8n"], capture_output=True,
                          text=True, env=env, timeout=120)
    assert done.returncode == 2
    assert done.stderr.startswith("mpt.compat.execution_specs needs execution-specs")
    assert 'pip install "mpt-engine[spec]"' in done.stderr and "Traceback" not in done.stderr
