"""The benchmark page's figures (issue 16): a dated reference run kept in the repository, drawn by every docs
build, with the drawn files git-ignored."""
import datetime
import importlib.util
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from mpt.bench import cases

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "docs" / "bench_reference.json"


def test_reference_run_is_a_dated_report_of_listed_cases():
    doc = json.loads(REFERENCE.read_text())
    date = datetime.datetime.fromisoformat(doc["date"])
    assert date.tzinfo is not None and date.year >= 2025
    assert doc["machine"]["cpu"] and doc["machine"]["cores"] >= 1 and doc["settings"]["count"] >= 5
    names = [b["name"] for b in doc["benchmarks"]]
    assert set(names) <= set(cases.CASES)
    assert {"HashFixedSize/10K", "CommitAfterHashFixedSize/10K", "Insert/10K"} <= set(names)
    # --peers: only listed Insert/N (py-trie, execution-specs) and MerkleRoot/N (hashlib, pymerkle) cases, and
    # mpt's peer entry is the main measurement itself.
    assert doc["peers"] and {p["name"] for p in doc["peers"]} <= {
        n for n in names if n.startswith(("Insert/", "MerkleRoot/"))}
    by_name = {b["name"]: b for b in doc["benchmarks"]}
    for p in doc["peers"]:
        if p["extra"]["impl"] == "mpt":
            assert p["samples"] == by_name[p["name"]]["samples"]
    assert {p["extra"]["impl"] for p in doc["peers"]} >= {"mpt", "py-trie"}


def test_docs_build_draws_from_the_reference_and_figures_are_ignored():
    makefile = (ROOT / "Makefile").read_text()
    assert "BENCH_JSON ?= docs/bench_reference.json" in makefile
    assert 'MPT_BENCH_REPORT="$(abspath $(BENCH_JSON))" $(SPHINXBUILD)' in makefile
    conf = (ROOT / "docs" / "conf.py").read_text()
    assert 'app.connect("builder-inited", _draw_bench_figures)' in conf
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    for drawn in ("docs/_static/bench_hash.png", "docs/_static/bench_peers.png", "docs/_static/bench_vs_geth.png",
                  "docs/_static/.bench_figures"):
        proc = subprocess.run(["git", "check-ignore", "-q", drawn], cwd=ROOT)
        assert proc.returncode == 0, "%s would show up as untracked" % drawn
    proc = subprocess.run(["git", "check-ignore", "-q", "docs/bench_reference.json"], cwd=ROOT)
    assert proc.returncode == 1, "the reference run must stay tracked"


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None, reason="matplotlib (the docs extra) missing")
def test_plot_bench_draws_every_figure_from_the_reference(tmp_path):
    import sys

    proc = subprocess.run([sys.executable, str(ROOT / "docs" / "plot_bench.py"), str(REFERENCE), "--out",
                           str(tmp_path)], capture_output=True, text=True, timeout=120,
                          env={"MPLBACKEND": "Agg", "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    for name in ("bench_hash.png", "bench_peers.png", "bench_vs_geth.png"):
        png = (tmp_path / name).read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10000
    assert "BENCHMARKS.md" not in (ROOT / "docs" / "plot_bench.py").read_text()


def test_nothing_cites_a_file_outside_the_repository():
    # BENCHMARKS.md lives outside the repository: docstrings, pages and plot legends cite the docs page instead.
    offenders = []
    for folder in ("mpt", "docs", "asv_bench", "tests"):
        for path in (ROOT / folder).rglob("*"):
            if any(part.startswith(".") for part in path.relative_to(ROOT).parts):
                continue    # asv's build copies (asv_bench/.asv), venvs: not the repository's text
            if path.suffix in (".py", ".pyx", ".pyi", ".rst", ".md") and path.name != "test_docs_figures.py":
                if "BENCHMARKS.md" in path.read_text(encoding="utf-8", errors="replace"):
                    offenders.append(str(path.relative_to(ROOT)))
    assert not offenders


# ------------------------------------------------------------------------------------------- figures for users

def _plot_bench():
    spec = importlib.util.spec_from_file_location("mpt_docs_plot_bench", ROOT / "docs" / "plot_bench.py")
    module = importlib.util.module_from_spec(spec)
    import sys

    sys.modules[spec.name] = module          # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None, reason="matplotlib (the docs extra) missing")
def test_figures_lay_out_cleanly_and_name_the_run(tmp_path):
    """No title or label cut off at the figure's edge, no legend over a data point or a ratio label, and the
    report's line named by its date, not "this run" (a docs build draws the committed reference run)."""
    import sys

    proc = subprocess.run([sys.executable, str(ROOT / "docs" / "plot_bench.py"), str(REFERENCE), "--out",
                           str(tmp_path)], capture_output=True, text=True, timeout=120,
                          env={"MPLBACKEND": "Agg", "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert "layout:" not in proc.stderr, proc.stderr
    source = (ROOT / "docs" / "plot_bench.py").read_text()
    assert "(this run" not in source and "this run)" not in source
    plot_bench = _plot_bench()
    assert plot_bench.run_label(json.loads(REFERENCE.read_text())) == "run of 2026-12-02"


def test_vs_geth_ratios_are_the_published_side_by_side_run():
    """The figure's ratios are the table of docs/performance.md, measured in one run beside geth."""
    plot_bench = _plot_bench()
    text = (ROOT / "docs" / "performance.md").read_text()
    table = text.split("### Ethereum Merkle Patricia Trie against go-ethereum", 1)[1].split("\n\n### ", 1)[0]
    published = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) != 4 or not cells[3][:1].isdigit():
            continue
        case, ratios = cells[0].split(" (")[0], cells[3].split(" · ")
        if " · " in case:                  # "VerifyRangeProof10 · 100 · 1000 · 5000"
            first, *rest = case.split(" · ")
            stem = first.rstrip("0123456789")
            names = [first] + [stem + r for r in rest]
        else:
            names = [case.replace(" ", "/")]
        published.update(zip(names, (float(r) for r in ratios)))
    assert published == plot_bench.SIDE_BY_SIDE_RATIO
    assert set(plot_bench.GETH) == set(published) == set(plot_bench.MPT_SIDE_BY_SIDE)


def test_code_blocks_wrap_and_user_pages_name_no_issue():
    conf = (ROOT / "docs" / "conf.py").read_text()
    assert 'html_css_files = ["wrap.css"]' in conf
    assert "white-space: pre-wrap" in (ROOT / "docs" / "_css" / "wrap.css").read_text()
    import re

    for page in [ROOT / "README.md", *(ROOT / "docs").glob("*.rst"), *(ROOT / "docs").glob("*.md")]:
        text = page.read_text()
        assert not re.search(r"\bissue \d+|branch issue-", text, re.I), page.name
    benchmarks = (ROOT / "docs" / "benchmarks.rst").read_text()
    in_block = False
    for line in benchmarks.splitlines():
        if line.startswith(".. code-block::"):
            in_block = True
        elif in_block and line and not line.startswith(" "):
            in_block = False
        assert not (in_block and len(line) > 90), line
