"""The README's two set-up commands stay true: CI runs the test command verbatim, the bench command exists."""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _readme_commands():
    text = (ROOT / "README.md").read_text()
    return re.findall(r"```sh\n(.+?)\n```", text)


def test_readme_opens_with_two_commands():
    bench, tests = _readme_commands()[:2]
    # Editable: run from the checkout, the source folder mpt/ shadows an installed copy.
    assert "pip install -e ." in bench and bench.endswith("python -m mpt.bench")
    assert tests.endswith("python -m pytest -q")


def test_ci_runs_the_readme_test_command_verbatim():
    test_command = _readme_commands()[1]
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert test_command in ci
