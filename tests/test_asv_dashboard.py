"""The asv suite (asv_bench/) and its offline dashboard.

Fast, always on: the generated benchmark module imports and defines one asv benchmark per registry case and
metric, with the attributes the suite relies on, and a cheap case runs through them.

Slow (skipped without Chromium, without asv/Cython in this interpreter, or without the dashboard's npm assets
in their cache: the suite fetches nothing): ``asv_bench/run.sh`` with K=1 and a ``-b`` filter takes HEAD's
compiled modules from this checkout's build, benchmarks HashFixedSize/10 and publishes the offline dashboard into
a temporary directory; the page is served on 127.0.0.1 and loaded in headless Chromium, which must draw the
HashFixedSize graph with the measured point, while the page references and requests nothing but local files.
"""

from __future__ import annotations

import html.parser
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[1]
ASV_BENCH = ROOT / "asv_bench"
BENCH_FILE = ASV_BENCH / "benchmarks" / "bench_trie.py"

# The registry's groups the brief names, each with its asv class and (if parameterized) its parameters.
EXPECTED = {
    "HashFixedSize": ["10", "100", "1K", "10K", "100K"],
    "CommitAfterHashFixedSize": ["10", "100", "1K", "10K", "100K"],
    "DeriveSha200": ["std_trie", "stack_trie"],
    "Insert100K": None,
    "Insert": ["1K", "10K", "100K"],
    "Prove": None,
    "VerifyProof": None,
    "VerifyRangeProof": ["10", "100", "1000", "5000"],
}
METHODS = ("time_op", "track_bytes_per_op", "track_allocs_per_op")


def _load(name: str, path: Path):
    """Import a file as a module called name (registered in sys.modules, as dataclasses need)."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
    return sys.modules[name]


def _bench_module():
    return _load("mpt_asv_bench_trie", BENCH_FILE)


# ---------------------------------------------------------------------------------------------------------------
# Fast: the generated module
# ---------------------------------------------------------------------------------------------------------------

def test_benchmark_module_lists_expected_benchmarks():
    from mpt.bench import cases

    bench = _bench_module()
    names = set(bench.benchmark_names())
    for cls_name, labels in EXPECTED.items():
        cls = bench.BENCHMARK_CLASSES[cls_name]
        if labels is None:
            assert not hasattr(cls, "params"), cls_name
            want = {"bench_trie.%s.%s" % (cls_name, m) for m in METHODS}
        else:
            assert cls.params == [labels], cls_name
            assert cls.param_names == ["variant" if cls_name == "DeriveSha200" else "size"]
            want = {"bench_trie.%s.%s(%r)" % (cls_name, m, label) for m in METHODS for label in labels}
        assert want <= names, sorted(want - names)
    # Every registry case is reachable, exactly once per method.
    covered = [bench.case_of(n) for n in names if ".time_op" in n]
    assert sorted(covered) == sorted(cases.CASES)
    assert len(names) == len(METHODS) * len(cases.CASES)
    assert bench.case_of("bench_trie.HashFixedSize.time_op('10K')") == "HashFixedSize/10K"
    assert bench.case_of("bench_trie.DeriveSha200.track_bytes_per_op('stack_trie')") == "DeriveSha200/stack_trie"
    assert bench.case_of("bench_trie.Insert100K.time_op") == "Insert100K"


def test_benchmark_attributes():
    from mpt.bench import cases

    bench = _bench_module()
    for cls in bench.BENCHMARK_CLASSES.values():
        assert cls.number == 1
        assert cls.rounds >= 2 and cls.repeat[0] >= 10 // cls.rounds
        stateful = any(cases.get(c).stateful for c in cls.cases.values())
        assert cls.warmup_time == (0.0 if stateful else 0.2)
        assert cls.track_bytes_per_op.unit == "bytes"
        assert cls.track_allocs_per_op.unit == "allocs"
        assert cls.__module__ == bench.__name__


def test_generated_benchmarks_run():
    """setup / time_op / track_* of two cheap cases, in-process, the way asv calls them."""
    bench = _bench_module()
    hfs = bench.BENCHMARK_CLASSES["HashFixedSize"]()
    hfs.setup("10")
    hfs.time_op("10")                              # hashes the fresh trie setup() built
    assert hfs.timer.ops == 1
    prove = bench.BENCHMARK_CLASSES["Prove"]()
    prove.setup()
    prove.time_op()
    assert prove.timer.ops > 1                     # Prove runs a batch per call: time per op, not per batch
    t0 = prove.timer()
    assert abs(t0 * prove.timer.ops - time.perf_counter()) < 1.0
    if bench._alloc is None:
        pytest.skip("mpt.bench._alloc is not built")
    for obj, args in ((hfs, ("10",)), (prove, ())):
        nbytes = obj.track_bytes_per_op(*args)
        nallocs = obj.track_allocs_per_op(*args)
        assert nbytes > 0 and nallocs > 0 and nbytes >= nallocs


@pytest.mark.skipif(importlib.util.find_spec("asv_runner") is None, reason="asv_runner is not installed")
def test_asv_discovers_the_suite():
    """asv's own discovery (in a subprocess: it imports the suite as the package `benchmarks`)."""
    code = (
        "import json, sys\n"
        "from asv_runner.discovery import disc_benchmarks\n"
        "out = [[b.name, b.params, b.param_names, getattr(b, 'unit', None)] for b in disc_benchmarks(sys.argv[1])]\n"
        "print(json.dumps(out))\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ASV_BENCH)] + sys.path))
    out = subprocess.run([sys.executable, "-c", code, str(ASV_BENCH / "benchmarks")], env=env, check=True,
                         capture_output=True, text=True, timeout=120).stdout
    found = {name: (params, param_names, unit) for name, params, param_names, unit in json.loads(out)}
    assert found["bench_trie.HashFixedSize.time_op"] == ([["'10'", "'100'", "'1K'", "'10K'", "'100K'"]], ["size"],
                                                         "seconds")
    assert found["bench_trie.Prove.track_bytes_per_op"] == ([], [], "bytes")
    assert found["bench_trie.VerifyProof.track_allocs_per_op"] == ([], [], "allocs")
    generated = [name for name in found if name.startswith("bench_trie.")]
    assert len(generated) == len(METHODS) * len(_bench_module().BENCHMARK_CLASSES)
    # bench_build_root: the BuildRoot cases' peak memory (MiB), one parameter per case.
    params, param_names, unit = found["bench_build_root.BuildRootMemory.track_peak_rss"]
    assert param_names == ["case"] and "'BuildRoot/1M/workers=2'" in params[0] and unit == "MiB"


def test_offline_assets_rewrite():
    """The CDN tags of asv's page become local ones; unknown remote tags are refused."""
    oa = _load("mpt_asv_offline_assets", ASV_BENCH / "offline_assets.py")
    page = ('<script src="https://code.jquery.com/jquery-3.3.1.min.js" integrity="sha256-x" crossorigin="anonymous" '
            'onerror="js_load_failure()"></script>\n<link rel="stylesheet" '
            'href="https://cdn.jsdelivr.net/npm/bootstrap@3.1.1/dist/css/bootstrap.min.css" integrity="sha256-y" '
            'crossorigin="anonymous">\n<script src="asv.js"></script>\n<a href="https://example.org/">a link</a>')
    new, done = oa.rewrite_html(page)
    assert oa.remote_references(page) and not oa.remote_references(new)
    assert '<script src="vendor/jquery-3.3.1/dist/jquery.min.js" onerror="js_load_failure()"></script>' in new
    assert '<link rel="stylesheet" href="vendor/bootstrap-3.1.1/dist/css/bootstrap.min.css">' in new
    assert 'href="https://example.org/"' in new          # a link to click, not something the page loads
    assert len(done) == 2
    with pytest.raises(oa.OfflineError, match="cdn.example"):
        oa.rewrite_html('<script src="https://cdn.example/x.js"></script>')


# ---------------------------------------------------------------------------------------------------------------
# Slow: run.sh, asv publish, offline assets, headless Chromium
# ---------------------------------------------------------------------------------------------------------------

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
HAVE_ASV = all(importlib.util.find_spec(m) is not None for m in ("asv", "Cython", "setuptools"))


def _missing_assets():
    """The dashboard's npm tarballs absent from their cache outside the repository (offline_assets.py). The test
    suite never fetches them: a test run asks no registry, so the dashboard test skips until they are there."""
    oa = _load("mpt_asv_offline_assets", ASV_BENCH / "offline_assets.py")
    return oa.missing_tarballs(oa.default_cache_dir())


MISSING_ASSETS = _missing_assets()
ASSETS_REASON = ("the dashboard's JavaScript/CSS are not cached (%s): fetch them once with "
                 "`python asv_bench/offline_assets.py --fetch` (npm registry)" % ", ".join(MISSING_ASSETS))
GRAPH = "bench_trie.HashFixedSize.time_op"
FILTER = r"^bench_trie\.HashFixedSize\..*\('10'\)$"

# Served from memory next to the dashboard (same origin), never written into it: loads the graph page in a frame,
# waits for flot's plot object, and reports its series, the canvas pixels at each point and the page state.
PROBE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>probe</title></head><body>
<pre id="probe">pending</pre>
<iframe id="dash" style="width:1280px;height:900px" src="index.html#%(graph)s"></iframe>
<script>
var tries = 0;
function report(obj) { document.getElementById("probe").textContent = JSON.stringify(obj); }
function probe() {
  tries += 1;
  var out = {tries: tries};
  try {
    var w = document.getElementById("dash").contentWindow, $ = w.jQuery;
    out.jquery = $ && $.fn ? $.fn.jquery : null;
    out.flot = !!($ && $.plot);
    var plot = $ ? $("#main-graph").data("plot") : null;
    if (!plot) {
      if (tries < 150) { setTimeout(probe, 100); return; }
      out.error = "no flot plot in #main-graph"; report(out); return;
    }
    var canvas = plot.getCanvas(), ctx = canvas.getContext("2d"), ratio = canvas.width / $(canvas).width();
    out.canvas = {width: canvas.width, height: canvas.height, cls: canvas.className};
    out.series = [];
    plot.getData().forEach(function (s) {
      var col = $.color.parse(s.color), pts = [];
      s.data.forEach(function (p) {
        if (!p || p[1] === null || p[1] === undefined) return;
        var off = plot.pointOffset({x: p[0], y: p[1]}), r = Math.round(6 * ratio);
        var img = ctx.getImageData(Math.round(off.left * ratio) - r, Math.round(off.top * ratio) - r,
                                   2 * r + 1, 2 * r + 1).data, hits = 0;
        for (var k = 0; k < img.length; k += 4) {
          if (img[k + 3] > 0 && Math.abs(img[k] - col.r) + Math.abs(img[k + 1] - col.g)
              + Math.abs(img[k + 2] - col.b) < 90) hits++;
        }
        pts.push({x: p[0], y: p[1], colored_pixels: hits});
      });
      out.series.push({label: s.label, points: pts});
    });
    out.legend = w.document.querySelectorAll("#main-graph .legend .legendLabel").length;
    out.ticks = w.document.querySelectorAll("#main-graph .flot-tick-label").length;
    out.error_modal = $("#error").is(":visible");
    out.log_scale = $("#log-scale").hasClass("active");
    out.title = w.document.title;
    out.done = true;
  } catch (e) { out.error = String(e); }
  report(out);
}
window.addEventListener("load", function () { setTimeout(probe, 200); });
</script></body></html>
"""


class _TagURLs(html.parser.HTMLParser):
    """The URLs a page loads through <script src> and <link href>."""

    def __init__(self):
        super().__init__()
        self.urls = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "script" and attrs.get("src"):
            self.urls.append(attrs["src"])
        elif tag == "link" and attrs.get("href"):
            self.urls.append(attrs["href"])


def _serve(directory: Path):
    """A static server on 127.0.0.1 (ephemeral port) that records every request and serves the probe page."""
    log = []
    probe = (PROBE % {"graph": GRAPH}).encode()

    class Handler(SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(directory), **kwargs)

        def do_GET(self):
            if self.path == "/__probe.html":
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(probe)))
                self.end_headers()
                self.wfile.write(probe)
                return
            super().do_GET()

        def log_request(self, code="-", size="-"):
            log.append((self.path, int(code) if str(code).isdigit() else code))

        def log_message(self, format, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server, log


def _path_without(program: str, shim_dir: Path) -> str:
    """PATH where program fails at once: a stub of that name in shim_dir comes first. (Leaving program's folders
    out of PATH would also hide what lives beside it, /usr/bin's bash and git among them.)"""
    shim_dir.mkdir(parents=True, exist_ok=True)
    stub = shim_dir / program
    stub.write_text("#!/bin/sh\necho '%s is out of reach in this test' >&2\nexit 127\n" % program)
    stub.chmod(0o755)
    return os.pathsep.join([str(shim_dir), os.environ.get("PATH", "")])


def test_dashboard_test_skips_instead_of_fetching(tmp_path, monkeypatch):
    """With an empty cache the dashboard test skips (naming the fetch command) even where npm is installed."""
    monkeypatch.setenv("MPT_ASV_ASSETS_CACHE", str(tmp_path))
    assert len(_missing_assets()) == 6
    oa = _load("mpt_asv_offline_assets", ASV_BENCH / "offline_assets.py")
    for package in oa.PACKAGES:
        (tmp_path / package.tarball).write_bytes(b"")
    assert _missing_assets() == []
    assert "offline_assets.py --fetch" in ASSETS_REASON


def _net_log_requests(path: Path):
    """(initiator, url) of every request in a Chromium net log (a log cut short is repaired). The initiator is
    the origin of the page that asked for it; the browser's own requests say "not an origin"."""
    raw = path.read_text()
    try:
        data = json.loads(raw)
    except ValueError:
        data = json.loads(raw.rstrip().rstrip(",") + "]}")
    names = {v: k for k, v in data["constants"]["logEventTypes"].items()}
    out = []
    for ev in data.get("events", []):
        params = ev.get("params") or {}
        if names.get(ev["type"]) == "URL_REQUEST_START_JOB" and "url" in params:
            out.append((params.get("initiator", ""), params["url"]))
    return out


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")
@pytest.mark.skipif(not HAVE_ASV, reason="asv/Cython not installed in this interpreter (pip install -e '.[bench]')")
@pytest.mark.skipif(bool(MISSING_ASSETS), reason=ASSETS_REASON)
def test_offline_dashboard_renders_hash_graph(tmp_path):
    from asv import util as asv_util

    started = time.monotonic()
    conf = asv_util.load_json(str(ASV_BENCH / "asv.conf.json"), js_comments=True)
    conf.update(repo=str(ROOT), benchmark_dir=str(ASV_BENCH / "benchmarks"), env_dir=str(tmp_path / "env"),
                results_dir=str(tmp_path / "results"), html_dir=str(tmp_path / "html"))
    conf_path = tmp_path / "asv.conf.json"
    conf_path.write_text(json.dumps(conf, indent=1))

    # HEAD's compiled modules come from this checkout's in-place build (MPT_ASV_PREBUILT): the suite never compiles
    # the package a second time. npm is out of reach: the assets come from the cache the skip above checked.
    env = dict(os.environ, K="1", PYTHON=sys.executable, ASV_CONFIG=str(conf_path), MPT_ASV_PREBUILT=str(ROOT),
               MPT_ASV_BUILD_ROOT=str(tmp_path / "builds"), PATH=_path_without("npm", tmp_path / "no-npm"))
    env.pop("COMMITS", None)
    proc = subprocess.run(["bash", str(ASV_BENCH / "run.sh"), "-b", FILTER], env=env, cwd=str(ROOT),
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-6000:]
    assert "=== building" not in proc.stderr and "(not compiled)" in proc.stderr, proc.stderr[-3000:]

    # The result asv recorded for HEAD.
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=str(ROOT), capture_output=True, text=True,
                          check=True).stdout.strip()
    assert "For mpt commit %s" % head[:8] in proc.stderr     # asv's log names the commit it measures
    result_files = [p for p in (tmp_path / "results").glob("*/%s-*.json" % head[:8])]
    assert len(result_files) == 1, list((tmp_path / "results").rglob("*.json"))
    # The machine is named by what it is (CPU model, cores), not by the host name or the interpreter's path.
    machine = result_files[0].parent.name
    assert re.fullmatch(r"[A-Za-z0-9.-]+-%dcores" % (os.cpu_count() or 1), machine), machine
    index = json.loads((tmp_path / "html" / "index.json").read_text())
    assert index["params"]["machine"] == [machine], index["params"]
    # The interpreter shows as its version, as in asv's own virtualenv builds, not as the venv's path.
    assert index["params"]["python"] == ["%d.%d" % sys.version_info[:2]], index["params"]
    recorded = json.loads(result_files[0].read_text())
    columns = recorded["result_columns"]
    entry = dict(zip(columns, recorded["results"][GRAPH]))
    params = entry["params"][0]
    measured = entry["result"][params.index("'10'")]
    assert measured is not None and 0 < measured < 0.1, entry

    # The published page references only local files.
    html_dir = tmp_path / "html"
    parser = _TagURLs()
    parser.feed((html_dir / "index.html").read_text())
    assert parser.urls, "no <script>/<link> found in index.html"
    remote = [u for u in parser.urls if urlsplit(u).scheme in ("http", "https") or u.startswith("//")]
    assert not remote, remote
    for url in parser.urls:
        assert (html_dir / urlsplit(url).path).is_file(), url

    server, served = _serve(html_dir)
    try:
        port = server.server_address[1]
        net_log = tmp_path / "netlog.json"
        cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-default-apps",
               "--disable-features=AutofillServerCommunication,Translate,MediaRouter,OptimizationHints",
               "--user-data-dir=%s" % (tmp_path / "chromium"),
               # Nothing but this machine resolves: a page that needed a CDN would fail to draw.
               "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
               "--log-net-log=%s" % net_log, "--window-size=1400,1000", "--virtual-time-budget=15000",
               "--dump-dom", "http://127.0.0.1:%d/__probe.html" % port]
        dom = subprocess.run(cmd, capture_output=True, text=True, timeout=120).stdout
    finally:
        server.shutdown()
        server.server_close()

    start = dom.find('<pre id="probe">')
    assert start >= 0, dom[:2000]
    text = dom[start + len('<pre id="probe">'):dom.index("</pre>", start)]
    probe = json.loads(html.unescape(text)) if text.startswith("{") else {"raw": text}
    assert probe.get("done"), probe
    assert probe["jquery"] == "3.3.1" and probe["flot"], probe
    assert probe["canvas"]["cls"] == "flot-base" and probe["canvas"]["width"] > 100, probe
    assert probe["ticks"] > 0 and probe["legend"] >= 1 and not probe["error_modal"], probe
    assert probe["log_scale"], probe        # a size-parameterized graph opens on a log y axis
    by_label = {s["label"]: s["points"] for s in probe["series"]}
    points = by_label.get("size-10")
    assert points and len(points) == 1, probe["series"]
    assert points[0]["y"] == pytest.approx(measured, rel=1e-6), (points, measured)
    assert points[0]["colored_pixels"] > 5, points     # the point is drawn in its series colour

    # Every request the pages made (the probe, the dashboard in its frame) went to our server and succeeded.
    origin = "http://127.0.0.1:%d" % port
    page_requests = [url for initiator, url in _net_log_requests(net_log) if initiator == origin]
    assert len(page_requests) >= len(parser.urls), page_requests
    assert all(urlsplit(u).hostname == "127.0.0.1" for u in page_requests), page_requests
    paths = {p.split("?")[0] for p, _ in served}
    assert any(p.startswith("/vendor/flot-0.8.3/") for p in paths), served
    assert any(p.startswith("/graphs/") and p.endswith("/%s.json" % GRAPH) for p in paths), served
    failed = [(p, code) for p, code in served if code != 200 and p != "/favicon.ico"]  # the browser's own guess
    assert not failed, failed
    print("dashboard test took %.0f s" % (time.monotonic() - started))


# ---------------------------------------------------------------------------------------------------------------
# Dashboard defaults: log y axis, regression thresholds
# ---------------------------------------------------------------------------------------------------------------

def _threshold(conf, entry_name):
    """asv's own rule (plugins/regressions.py): the largest threshold whose regex matches, else 5%."""
    matching = [float(t) for regex, t in conf["regressions_thresholds"].items() if re.match(regex, entry_name)]
    return max(matching, default=0.05)


@pytest.mark.skipif(importlib.util.find_spec("asv") is None, reason="asv is not installed (pip install -e '.[bench]')")
def test_regression_thresholds_ignore_a_loaded_machines_steps():
    """A 1.6x step of every time (a loaded machine, as at 7f07cf3) is not flagged; a 2x one is; allocation counts
    keep asv's 5%."""
    from asv import util as asv_util
    from asv.step_detect import detect_regressions

    conf = asv_util.load_json(str(ASV_BENCH / "asv.conf.json"), js_comments=True)

    def flagged(name, ratio):
        steps = [(0, 6, 1.0, 1.0, 0.01), (6, 12, ratio, ratio, 0.01)]
        return detect_regressions(steps, _threshold(conf, name))[2] is not None

    for name in ("bench_trie.HashFixedSize.time_op('10K')", "bench_trie.Prove.time_op",
                 "bench_trie.CommitAfterHashFixedSize.time_op('100K')"):
        assert not flagged(name, 1.6) and flagged(name, 2.0), name
    assert flagged("bench_trie.HashFixedSize.track_allocs_per_op('10K')", 1.1)


@pytest.mark.skipif(importlib.util.find_spec("asv") is None, reason="asv is not installed (pip install -e '.[bench]')")
def test_parameterized_graphs_open_on_a_log_axis(tmp_path):
    """The published graphdisplay.js of this asv gets the log default, once; node (where installed) parses it."""
    import asv

    defaults = _load("mpt_asv_dashboard_defaults", ASV_BENCH / "dashboard_defaults.py")
    original = (Path(asv.__file__).parent / "www" / "graphdisplay.js").read_text()
    (tmp_path / "graphdisplay.js").write_text(original)
    assert defaults.main([str(tmp_path)]) == 0
    patched = (tmp_path / "graphdisplay.js").read_text()
    assert patched.count(defaults.MARKER) == 1 and "params['y-axis-scale'] = ['log'];" in patched
    assert "['log']: ['linear']" in patched
    assert defaults.patch_source(patched) == patched
    with pytest.raises(defaults.PatchError):
        defaults.patch_source("var log_scale = false;")
    assert "dashboard_defaults.py" in (ASV_BENCH / "run.sh").read_text()
    node = shutil.which("node")
    if node:
        check = subprocess.run([node, "--check", str(tmp_path / "graphdisplay.js")], capture_output=True, text=True)
        assert check.returncode == 0, check.stderr


def test_run_sh_names_each_commit_in_asvs_log():
    """asv names the commits of its configuration's "branches" in its log, not --set-commit-hash: run.sh runs
    each commit from a copy of the configuration whose branch is that commit."""
    run_sh = (ASV_BENCH / "run.sh").read_text()
    assert 'conf["branches"] = [sha]' in run_sh and '--config "$run_conf"' in run_sh
    assert "benchmarked in $((SECONDS - started)) s" in run_sh and "built in $((SECONDS - started)) s" in run_sh
