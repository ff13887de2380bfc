"""The figures the documentation quotes agree with their sources (issue 30): docs/performance.md's Python peers with
the reference run (docs/bench_reference.json), its IAVL table with docs/iavl.rst's, README's IAVL ratios with
both. A re-recorded reference run or a new table that leaves a quoted figure behind fails here."""
import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PERFORMANCE = (ROOT / "docs" / "performance.md").read_text()
IAVL = (ROOT / "docs" / "iavl.rst").read_text()
README = (ROOT / "README.md").read_text()
REFERENCE = json.loads((ROOT / "docs" / "bench_reference.json").read_text())


def _sig3(seconds):
    """A time with 3 significant digits in s, ms or µs, as the doc writes it."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            value = seconds / scale
            return "%s %s" % (("%.3g" % value) if value < 1000 else "%d" % round(value), unit)
    return "%.3g ns" % (seconds * 1e9)


def _peers(case):
    return {p["extra"]["impl"]: p for p in REFERENCE["peers"] if p["name"] == case}


def test_python_peer_table_is_the_reference_run():
    rows = []
    for impl, label in (("py-trie", "py-trie (`HexaryTrie`)"), ("execution-specs", "execution-specs trie")):
        cells = []
        for case in ("Insert/1K", "Insert/10K"):
            p = _peers(case)[impl]
            cells.append("%s (%d×)" % (_sig3(p["median"] / 1e9), round(p["extra"]["ratio_vs_mpt"])))
        rows.append("| %s | %s |" % (label, " | ".join(cells)))
    mpt_cells = [_sig3(_peers(case)["mpt"]["median"] / 1e9) for case in ("Insert/1K", "Insert/10K")]
    rows.append("| mpt (`Trie`) | %s |" % " | ".join(mpt_cells))
    for row in rows:
        assert row in PERFORMANCE, row


def test_merkle_peer_ratios_are_the_reference_run():
    ratios = {impl: [_peers("MerkleRoot/%s" % n)[impl]["extra"]["ratio_vs_mpt"] for n in ("100", "1K", "10K")]
              for impl in ("hashlib", "pymerkle")}
    want = ("a `hashlib.sha256` loop takes %.1f to %.1f times mpt's `merkle.root` (100 to 10,000 leaves), and "
            "pymerkle %d to %d times" % (min(ratios["hashlib"]), max(ratios["hashlib"]),
                                         round(min(ratios["pymerkle"])), round(max(ratios["pymerkle"]))))
    assert want in " ".join(PERFORMANCE.split())


def test_100k_peer_times_are_the_ones_the_bench_estimates_with():
    from mpt.bench.peers import SECONDS_PER_OP

    text = " ".join(PERFORMANCE.split())
    want = ("at 100,000 accounts py-trie took %s and the execution-specs trie %s." % (
        _sig3(SECONDS_PER_OP[("py-trie", "Insert/100K")]), _sig3(SECONDS_PER_OP[("execution-specs", "Insert/100K")])))
    assert want in text


def _iavl_rst_cells():
    """{row label: [mpt MemoryDB, Go MemDB, mpt LevelDB, Go goleveldb]} of iavl.rst's tree table."""
    table = IAVL[IAVL.index("   * - case\n"):]
    table = table[:table.index("\n\n")]
    rows = {}
    for chunk in table.split("   * - ")[2:]:
        cells = [c.strip() for c in chunk.split("     - ")]
        rows[cells[0]] = cells[1:]
    return rows


def test_performance_iavl_table_is_iavl_rst_table():
    rst = _iavl_rst_cells()
    labels = {"10,000 sets + SaveVersion on an empty tree": "``Set10K+Save``",
              "100,000 sets + SaveVersion": "``Set100K+Save``",
              "10,000 random gets in a saved 100,000-key tree (fast index)": "``Get100K`` (10,000 gets, fast index)"}
    for label, key in labels.items():
        mpt_cell, go_cell = rst[key][0], rst[key][1]
        m = re.fullmatch(r"(.+) \((.+)×\)", mpt_cell)
        row = "| %s | %s | %s | %s |" % (label, go_cell, m.group(1), m.group(2))
        assert row in PERFORMANCE, row
    assert "27 ms" not in PERFORMANCE and "6-11" not in PERFORMANCE


def test_readme_iavl_ratios_are_iavl_rst_table():
    rst = _iavl_rst_cells()

    def ratios(key):
        return [float(x) for cell in (rst[key][0], rst[key][2])
                for x in re.search(r"\(([\d.]+)(?:-([\d.]+))?×\)", cell).groups() if x]

    sets = ratios("``Set10K+Save``") + ratios("``Set100K+Save``")
    gets = ratios("``Get100K`` (10,000 gets, fast index)")
    text = " ".join(README.split())
    assert "it takes %.2f-%.2fx Go's time to set and save 10,000 or 100,000 keys" % (min(sets), max(sets)) in text
    assert "and %.2f-%.2fx for 10,000 gets through the fast index" % (min(gets), max(gets)) in text


@pytest.mark.parametrize("figure", ["215 times", "77 times", "27 ms"])
def test_stale_figures_are_gone(figure):
    assert figure not in PERFORMANCE


def _plot_bench():
    import importlib.util

    spec = importlib.util.spec_from_file_location("plot_bench", ROOT / "docs" / "plot_bench.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["plot_bench"] = module          # its dataclasses look their module up while it runs
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules["plot_bench"]
    return module


_UNITS = {"ns": 1.0, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}


def _geth_table_rows():
    """{case: (geth ns, mpt ns, ratio)} of docs/performance.md's table against go-ethereum."""
    section = PERFORMANCE[PERFORMANCE.index("### Ethereum Merkle Patricia Trie against go-ethereum"):]
    section = section[:section.index("\n\n", section.index("| case |"))]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) != 4 or not cells[0][0].isupper() or cells[0] == "case":
            continue
        label = re.sub(r" \(.*\)$", "", cells[0])
        parts = [p.strip() for p in label.split("·")]
        prefix = re.match(r"(.*?)(\d+K?)$", parts[0]).group(1) if len(parts) > 1 else ""
        names = [parts[0]] + [prefix + p for p in parts[1:]]
        names = [n.replace(" ", "/") for n in names]

        def times(cell):
            return [float(v) * _UNITS[u] for v, u in re.findall(r"([\d.]+) (ns|us|µs|ms|s)\b", cell)]

        for name, geth, mpt, ratio in zip(names, times(cells[1]), times(cells[2]),
                                          [float(r) for r in cells[3].split("·")]):
            rows[name] = (geth, mpt, ratio)
    return rows


def test_the_geth_figures_the_docs_draw_are_the_performance_table():
    plot = _plot_bench()
    rows = _geth_table_rows()
    assert set(rows) == set(plot.GETH) == set(plot.MPT_SIDE_BY_SIDE) == set(plot.SIDE_BY_SIDE_RATIO)
    for name, (geth, mpt, ratio) in rows.items():
        assert plot.GETH[name][0] == pytest.approx(geth, rel=1e-9), name
        assert plot.MPT_SIDE_BY_SIDE[name] == pytest.approx(mpt, rel=1e-9), name
        assert plot.SIDE_BY_SIDE_RATIO[name] == ratio, name
        # The published ratio is that of the unrounded medians: within the rounding of the two figures.
        assert abs(mpt / geth - ratio) <= 0.006 + ratio * 0.06, name
    assert plot.SIDE_BY_SIDE_RUN.endswith(re.search(r"measured on\s+(\d{4}-\d\d-\d\d)", PERFORMANCE).group(1))


def test_the_geth_times_of_the_benchmarks_page_are_the_performance_table():
    rst = (ROOT / "docs" / "benchmarks.rst").read_text()
    table = rst[rst.index("geth's figures\n"):]
    table = table[table.index("====="):table.index("\nFigures\n")]
    rows = []                                           # [label, time cell]; a continuation line extends a cell
    for line in table.splitlines():
        if not line.strip() or line.startswith("="):
            continue
        if line.startswith(" "):
            rows[-1][1] += " " + line.strip()
            continue
        rows.append(re.split(r" {2,}", line.strip())[:2])
    geth = _geth_table_rows()
    checked = 0
    for label, cell in rows[1:]:
        label = re.sub(r" \(.*\)$", "", label)
        if label.startswith("VerifyRangeProof"):
            names = ["VerifyRangeProof" + n for n in label.split(" ", 1)[1].split(" / ")]
        elif label.startswith("DeriveSha200"):
            names = ["DeriveSha200/" + n for n in label.split(" ", 1)[1].split(" / ")]
        else:
            names = label.split(" / ")
        values = [float(v) * _UNITS[u] for v, u in re.findall(r"([\d.]+) (µs|ms)", cell)]
        if len(values) < len(names):                    # "205 / 168 µs": one unit for the cell
            values = [float(v) * _UNITS[cell.split()[-1]] for v in re.findall(r"[\d.]+", cell)]
        assert len(values) == len(names), (label, cell)
        for name, value in zip(names, values):
            assert geth[name][0] == pytest.approx(value, rel=1e-9), name
            checked += 1
    assert checked == 16


def _cell_times(cell):
    """The times of a table cell in ns: "16.5 us · 64.5 us" (a unit each) or "25.7 · 26.1 ns" (one for all)."""
    pairs = re.findall(r"([\d.]+) (ns|us|µs|ms|s)\b", cell)
    values = re.findall(r"[\d.]+", cell)
    if len(pairs) == len(values):
        return [float(v) * _UNITS[u] for v, u in pairs]
    return [float(v) * _UNITS[cell.split()[-1]] for v in values]


def test_every_ratio_against_the_peers_is_its_rows_two_times_divided():
    section = PERFORMANCE[PERFORMANCE.index("## Against the peers"):PERFORMANCE.index("### Python peers")]
    checked = 0
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) != 4 or not re.fullmatch(r"[\d.]+( · [\d.]+)*", cells[3]):
            continue
        ratios = [float(x) for x in cells[3].split("·")]
        go, mpt = _cell_times(cells[1]), _cell_times(cells[2])
        assert len(go) == len(mpt) == len(ratios), line
        for g, m, r in zip(go, mpt, ratios):
            # The published ratio is that of the unrounded medians: within the rounding of the two figures.
            assert abs(m / g - r) <= 0.006 + r * 0.06, line
            checked += 1
    assert checked >= 40


def _range(text):
    """(low, high) of "0.98 to 0.99" or "0.98"."""
    values = [float(v) for v in text.split(" to ")]
    return values[0], values[-1]


def test_the_floors_beside_the_peers_are_their_figures_divided():
    """Each floor the notes set beside a case over 0.3 times Go, as a share of Go's time, is the floor divided by
    Go's time in the table (the floors themselves come from scripts/peer_floors.py, which the page names)."""
    text = " ".join(PERFORMANCE.split())
    geth = _geth_table_rows()
    assert "`python scripts/peer_floors.py`" in text
    m = re.search(r"they take ([\d.]+(?: to [\d.]+)?) us here .*?, ([\d.]+(?: to [\d.]+)?) times geth's whole", text)
    (lo, hi), (rlo, rhi) = _range(m.group(1)), _range(m.group(2))
    go = geth["VerifyProof"][0] / 1e3
    assert (round(lo / go, 2), round(hi / go, 2)) == (rlo, rhi)
    m = re.search(r"one message at a time: ([\d.]+(?: to [\d.]+)?) us of the [\d.]+ \(([\d.]+(?: to [\d.]+)?) times "
                  r"Go's", text)
    (lo, hi), (rlo, rhi) = _range(m.group(1)), _range(m.group(2))
    go = float(re.search(r"\| MerkleVerify \(Proof.Verify\) \| ([\d.]+) us \|", PERFORMANCE).group(1))
    assert (round(lo / go, 2), round(hi / go, 2)) == (rlo, rhi)
    m = re.search(r"`dict.get` in the bench's loop takes ([\d.]+ to [\d.]+) us for the 10,000 keys here, "
                  r"([\d.]+ to [\d.]+) times Go's 10,000 gets, and `tree.get` ([\d.]+ to [\d.]+) us "
                  r"\(([\d.]+ to [\d.]+) times that floor", text)
    floor, share, gets, over = (_range(g) for g in m.groups())
    go = float(re.search(r"\(fast index\) \| ([\d.]+) ms \|", PERFORMANCE).group(1)) * 1e3
    assert (round(floor[0] / go, 2), round(floor[1] / go, 2)) == share
    # Each run's gets over its own floor: the range of the ratios lies within what the two ranges allow.
    assert over[0] >= round(gets[0] / floor[1], 2) and over[1] <= round(gets[1] / floor[0], 2)
    # docs/iavl.rst and README quote the same run.
    iavl = " ".join(IAVL.split())
    floor_us, share_go, gets_us, over_floor = m.groups()
    assert ("takes %s µs for the 10,000 keys on this machine, %s times Go's, and ``tree.get`` %s µs, %s times that "
            "floor" % (floor_us, share_go, gets_us, over_floor)) in iavl
    readme = " ".join(README.split())
    assert "`dict.get` alone, which takes %.2f-%.2fx" % share in readme
    # README's "within 10%" of that floor is each run's gets over its own floor.
    assert "within 10% of a Python loop calling `dict.get` alone" in readme and 0.9 <= over[0] <= over[1] <= 1.1


NOTES = (ROOT / "docs" / "contributing" / "performance_notes.md").read_text()


def test_the_keccak_ratios_and_hash_threads_are_the_notes_runs():
    # docs/performance.md quotes the ranges of the runs the contributors' notes list (issue 34, session 13).
    text = " ".join(PERFORMANCE.split())
    # The latest runs (issue 34, session 16: the trie's records in its arena): each table's last row per backend.
    runs = {}
    for backend in ("avx2", "avx512"):
        row = re.findall(r"^\| %s \| ([\d., ]+) \| ([\d., ]+) \|" % backend, NOTES, re.M)[-1]
        runs[backend] = [[float(v) for v in cell.split(",")] for cell in row]
    assert ("it is %s on AVX2 at 10,000 accounts and %s at 100,000, and %s and %s on AVX-512" % (
        _span(runs["avx2"][0]), _span(runs["avx2"][1]), _span(runs["avx512"][0]), _span(runs["avx512"][1]))) in text
    pairs = re.findall(r"--hash-threads N`, N = 1, 2, 1, 2 in a row\): ([\d.]+) and ([\d.]+) ms, then ([\d.]+) and "
                       r"([\d.]+) ms", " ".join(NOTES.split()))[-1]
    one, two, one_again, two_again = (float(v) for v in pairs)
    low, high = sorted((two / one, two_again / one_again))
    assert "two threads take %.2f to %.2f times the time of one for HashFixedSize/100K" % (low, high) in text


def test_the_iavl_allocation_counts_are_the_bench_cases():
    """docs/iavl.rst's allocations per op of the tree cases, counted as `python -m mpt.bench` counts them (one op
    after a collection; the counts hardly move between runs, so 5% covers what the interpreter adds)."""
    from mpt.bench.cases import get
    from mpt.bench.cases.iavl_trees import leveldb_available
    from mpt.bench.runner import Runner

    text = " ".join(IAVL.split())
    found = re.search(r"Allocations per op: (\d+) K \(Set10K\+Save, either store\), ([\d.]+) M \(Set100K\+Save\), "
                      r"(\d+) for the 10,000 gets .*?, ([\d.]+) M \(Prune on MemoryDB; ([\d.]+) M on LevelDB", text)
    assert found, "the allocation sentence of docs/iavl.rst changed"
    quoted = {"Set10K+Save": float(found.group(1)) * 1e3, "Set100K+Save": float(found.group(2)) * 1e6,
              "Get100K": float(found.group(3))}
    stores = ["MemoryDB"] + (["LevelDB"] if leveldb_available() else [])
    for store in stores:
        want = dict(quoted, Prune=float(found.group(4 if store == "MemoryDB" else 5)) * 1e6)
        for workload, count in want.items():
            case = get("IAVLTree/%s/%s" % (workload, store))
            state = case.setup()
            if workload == "Get100K":
                case.op(state)          # the values cached, as after the bench's first sample
            allocs = Runner._allocs(case, state)[1]
            assert abs(allocs - count) <= 0.05 * count + 1, (workload, store, allocs, count)


def _span(values):
    """How the docs quote a range of ratios: "1.21 to 1.26", or one figure when both ends round alike."""
    low, high = "%.2f" % min(values), "%.2f" % max(values)
    return low if low == high else "%s to %s" % (low, high)


def test_the_prune_figures_are_the_notes_runs():
    # docs/iavl.rst's pruning figures after the version scans (issue 34, session 15): the side-by-side medians of
    # the rounds the contributors' notes list, and the stores' own parts of the op from scripts/peer_floors.py.
    import statistics

    section = NOTES[NOTES.index("## Issue 34, pruning with scans"):]
    section = section[:section.index("\n## ")] if "\n## " in section else section
    rows = re.findall(r"^\| [12] \| [123] \| ([\d.]+) \| ([\d.]+) \| ([\d., ]+) \| ([\d., ]+) \|$", section, re.M)
    assert len(rows) == 6
    go_mem = statistics.median(float(r[0]) for r in rows)
    go_ldb = statistics.median(float(r[1]) for r in rows)
    mpt_mem = statistics.median(float(v) for r in rows for v in r[2].split(","))
    mpt_ldb = statistics.median(float(v) for r in rows for v in r[3].split(","))
    go_all = [float(r[i]) for r in rows for i in (0, 1)]
    notes = " ".join(section.split())
    mem = re.search(r"MemoryDB: its dict alone: ([\d,]+) node lookups ([\d.]+) ms and ([\d,]+) pops ([\d.]+) ms, "
                    r"([\d.]+) ms of the op's ([\d.]+) ms", notes).groups()
    ldb = re.search(r"LevelDB: LevelDB alone: scans of ([\d,]+) records ([\d.]+) ms, ([\d,]+) node reads ([\d.]+) ms "
                    r"and a batch of ([\d,]+) deletes ([\d.]+) ms, ([\d.]+) ms of the op's ([\d.]+) ms", notes).groups()
    assert round(float(mem[1]) + float(mem[3]), 1) == float(mem[4])
    assert round(float(ldb[1]) + float(ldb[3]) + float(ldb[5]), 1) == float(ldb[6])
    # "a LevelDB scan hands over a record in about a third of the time of a read by key": per record, the run's scans
    # against its reads by key.
    per_scanned = float(ldb[1]) / int(ldb[0].replace(",", ""))
    per_read = float(ldb[3]) / int(ldb[2].replace(",", ""))
    assert 0.25 <= per_scanned / per_read <= 0.4
    assert "a LevelDB scan hands over a record in about a third of the time of a read by key" in " ".join(IAVL.split())
    # The notes' medians and shares are the table's.
    assert ("Medians: LevelDB %.2f against %.2f ms (%.2f; 0.91 in session 14), its floor %.2f of Go's time; MemoryDB "
            "%.2f against %.2f ms (%.2f;" % (mpt_ldb, go_ldb, mpt_ldb / go_ldb, float(ldb[6]) / go_ldb, mpt_mem, go_mem,
                                             mpt_mem / go_mem)) in notes
    assert "its floor %.2f." % (float(mem[4]) / go_mem) in notes
    text = " ".join(IAVL.split())
    rev = re.search(r"mpt at (\w+), two runs of three alternating rounds at", notes).group(1)
    assert ("Side by side again (mpt at %s, two runs of three alternating rounds): %.0f ms against Go's %.0f ms on "
            "LevelDB (%.2f×; LevelDB's own part alone is %.2f times Go's time), and %.0f against %.0f ms on MemoryDB "
            "(%.2f×; its dict alone %.2f times), Go's own times moving between %.0f and %.0f ms" % (
                rev, mpt_ldb, go_ldb, mpt_ldb / go_ldb, float(ldb[6]) / go_ldb, mpt_mem, go_mem, mpt_mem / go_mem,
                float(mem[4]) / go_mem, min(go_all), max(go_all))) in text
    assert ("LevelDB's scans of %s records take %s ms, the %s records still read by key %s ms and the batch of %s "
            "deletes %s ms (``python scripts/peer_floors.py``), %s ms of the op's %s ms; on a MemoryDB, the %s lookups "
            "in its dict take %s ms and the %s pops %s ms, %s ms of the op's %s ms." % (ldb + mem)) in text


def test_the_arena_figures_are_the_notes_runs():
    # docs/performance.md's figures for the trie's records (issue 34, session 16): the keccak ratios it had on node
    # objects are the session-13 runs of the contributors' notes (each backend's first row), and the memory is the
    # notes' RSS run.
    text = " ".join(PERFORMANCE.split())
    before = {}
    for backend in ("avx2", "avx512"):
        row = re.findall(r"^\| %s \| ([\d., ]+) \| ([\d., ]+) \|" % backend, NOTES, re.M)[0]
        before[backend] = [float(v) for cell in row for v in cell.split(",")]
    assert "over node objects, with a slower Keccak, it was %s and %s." % (
        _span(before["avx2"]), _span(before["avx512"])) in text
    arena, objects = re.search(r"([\d.]+) MB on its arena, ([\d.]+) MB on node objects", " ".join(NOTES.split())
                               ).groups()
    assert "%d MB for the 100,000 accounts against %d MB of node objects" % (
        round(float(arena)), round(float(objects))) in text


def test_the_codec_and_proof_floors_are_the_notes_runs():
    """docs/performance.md's IAVL codec floors and VerifyProof's Keccak floors are the scripts/peer_floors.py runs the
    contributors' notes list (issue 34, session 18)."""
    notes = " ".join(NOTES.split())
    text = " ".join(PERFORMANCE.split())
    r = r"([\d.]+ to [\d.]+)"
    codec = re.search(r"IAVL codecs: `decode_node` %s ns, the call alone %s ns, returning a node with its key and "
                      r"value bytes %s ns .*?`leaf.to_bytes` %s ns, the method call alone %s ns, returning a new bytes "
                      r"object %s ns" % ((r,) * 6), notes).groups()
    assert ("`decode_node` takes %s ns, the same call returning None %s ns, and returning a node object with its key "
            "and value bytes, nothing parsed, %s ns; `leaf.to_bytes` takes %s ns, the method call returning None %s "
            "ns, and returning a new bytes object of the encoding's size, nothing written, %s ns." % codec) in text
    lanes, one_lane = re.search(r"All six runs: the Keccak of the 6 nodes on the lanes %s us, on one lane %s us"
                                % (r, r), notes).groups()
    root = re.search(r"the 532-byte root alone %s us" % r, notes).group(1)
    assert "they take %s us here (%s us one after another on one lane)" % (lanes, one_lane) in text
    assert "takes %s us." % root in text



def test_the_geth_summary_and_the_pass_chunk_are_the_table_and_the_code():
    """docs/performance.md: "at most X times geth's time" is the highest ratio of its geth table, and the pass's
    encodings per Keccak call are mpt/ethereum/arena.pxd's PASS_CHUNK."""
    text = " ".join(PERFORMANCE.split())
    worst = max(ratio for _, _, ratio in _geth_table_rows().values())
    assert "Every case takes at most %.2f times geth's time on one core." % worst in text
    chunk = int(re.search(r"^\s+PASS_CHUNK = (\d+)$", (ROOT / "mpt" / "ethereum" / "arena.pxd").read_text(),
                          re.M).group(1))
    assert "height by height, {:,} encodings to a call".format(chunk) in text
