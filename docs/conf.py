"""Sphinx configuration of mpt's documentation.

Build with ``make docs`` (``sphinx-build -W -b html docs docs/_build/html``: warnings are errors). The API pages
import the *compiled* package, so install it first: ``pip install -e ".[docs]"``. The signatures of compiled
functions come from the docstrings Cython writes (``embedsignature``).
"""
import ast
import os
import re

try:
    import mpt
    import mpt.ethereum.trie  # noqa: F401  - a compiled module: fails early and clearly when the build is missing
except ImportError as e:  # pragma: no cover - depends on the environment
    raise RuntimeError(
        "the documentation imports the compiled mpt package; build it first: pip install -e '.[docs]' (%s)" % e
    ) from e

project = "mpt"
author = "mpt developers"
copyright = "mpt developers"
version = release = mpt.__version__

# myst_parser: pages written in Markdown (performance.md) are pages of the site like the .rst ones.
extensions = ["sphinx.ext.autodoc", "myst_parser"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
# Markdown headings get anchors, so a page can link to a section of another ("file.md#section").
myst_heading_anchors = 3

# Plain reStructuredText docstrings (no Google/NumPy sections), so no napoleon.
autodoc_default_options = {
    "members": True,
    "undoc-members": True,
    "show-inheritance": True,
    "member-order": "bysource",
}
autodoc_docstring_signature = True      # Cython puts the signature on the first docstring line
autodoc_typehints = "signature"
autoclass_content = "class"
add_module_names = False

exclude_patterns = ["_build", "_static/*.json", "_static/*.png"]
html_theme = "alabaster"
html_theme_options = {
    "description": "Compiled Merkle trees for Python: Ethereum MPT, CometBFT simple Merkle, Cosmos IAVL",
    "fixed_sidebar": True,
    "page_width": "1100px",
    "sidebar_width": "230px",
}
# Code blocks wrap their long lines (a comment at the end of a command stays visible).
html_static_path = ["_css"]
html_css_files = ["wrap.css"]
html_sidebars = {"**": ["about.html", "navigation.html", "searchbox.html"]}
html_title = "mpt %s" % release
pygments_style = "sphinx"
nitpicky = False

HERE = os.path.dirname(os.path.abspath(__file__))
STUB_ROOT = os.path.dirname(os.path.abspath(mpt.__file__))

# ------------------------------------------------------------------------------------------------ signatures
# Cython's embedded signatures read like C: ``(self, bool set_head=False)``. This hook shows them the Python
# way, ``(set_head: bool = False)``, and takes from the shipped .pyi stubs what the compiled objects cannot
# say: where ``*`` goes (Cython 3 prints a class's keyword-only parameters before a trailing ``*``).

_C_TYPES = {"bint": "bool", "Py_ssize_t": "int", "size_t": "int", "double": "float", "object": None}
_C_PARAM = re.compile(r"^([A-Za-z_][\w.]*)\s+(\**[A-Za-z_]\w*)\s*(=.*)?$")


def _split_params(inner):
    params, depth, quote, cur = [], 0, None, ""
    for ch in inner:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            params.append(cur.strip())
            cur = ""
            continue
        cur += ch
    if cur.strip():
        params.append(cur.strip())
    return params


def _stub_functions():
    """{qualified name: ast.FunctionDef} of the stubs' functions, methods and class constructors."""
    found = {}
    for dirpath, _, files in os.walk(STUB_ROOT):
        for fname in files:
            if not fname.endswith(".pyi"):
                continue
            path = os.path.join(dirpath, fname)
            rel = os.path.relpath(path, os.path.dirname(STUB_ROOT))[: -len(".pyi")]
            modname = rel.replace(os.sep, ".")
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read(), path)
            for node in tree.body:
                if isinstance(node, ast.FunctionDef):
                    found.setdefault("%s.%s" % (modname, node.name), node)
                elif isinstance(node, ast.ClassDef):
                    for item in node.body:
                        if isinstance(item, ast.FunctionDef):
                            key = "%s.%s.%s" % (modname, node.name, item.name)
                            found.setdefault(key, item)
                            if item.name in ("__init__", "__new__"):
                                found.setdefault("%s.%s" % (modname, node.name), item)
    return found


_STUBS = _stub_functions()


def _python_signature(name, signature):
    params = _split_params(signature.strip()[1:-1])
    if params and params[0] in ("self", "cls"):
        params = params[1:]
    out = []
    for p in params:
        m = _C_PARAM.match(p)
        if m and m.group(1) not in ("*", "/"):
            ctype, pname, default = m.group(1), m.group(2), m.group(3)
            pytype = _C_TYPES.get(ctype, ctype)
            if pytype is None:
                p = pname + (default or "")
            elif default:
                p = "%s: %s = %s" % (pname, pytype, default[1:].strip())
            else:
                p = "%s: %s" % (pname, pytype)
        out.append(p)
    if out and out[-1] == "*":
        out.pop()
        stub = _STUBS.get(name)
        kwonly = {a.arg for a in stub.args.kwonlyargs} if stub is not None else set()
        first = next((i for i, p in enumerate(out) if re.split(r"[:=]", p)[0].strip() in kwonly), None)
        if first is not None:
            out.insert(first, "*")
    return "(%s)" % ", ".join(out)


def _process_signature(app, what, name, obj, options, signature, return_annotation):
    # No signature: modules, data, and classes built through __cinit__ (api.rst gives theirs explicitly).
    if not signature or not signature.startswith("(") or what in ("module", "data", "attribute", "property"):
        return None
    return _python_signature(name, signature), return_annotation


# ------------------------------------------------------------------------------------------------ figures
# The benchmark figures are drawn at every build from one JSON report: the reference run kept in the repository
# (bench_reference.json), or the report named by MPT_BENCH_REPORT (`make docs BENCH_JSON=...`). They land in
# _static/ (git-ignored) and are redrawn only when the report or docs/plot_bench.py changed since the last draw.

BENCH_REPORT = os.environ.get("MPT_BENCH_REPORT") or os.path.join(HERE, "bench_reference.json")
FIGURES = ("bench_hash.png", "bench_peers.png", "bench_vs_geth.png")


def _draw_bench_figures(app):
    from sphinx.util import logging

    log = logging.getLogger("mpt.docs")
    out = os.path.join(HERE, "_static")
    script = os.path.join(HERE, "plot_bench.py")
    if not os.path.isfile(BENCH_REPORT):
        log.warning("no benchmark report at %s: the figures are missing (run make docs-plots)" % BENCH_REPORT)
        return
    stamp_path = os.path.join(out, ".bench_figures")
    stamp = "%s %d %d" % (os.path.abspath(BENCH_REPORT), os.stat(BENCH_REPORT).st_mtime_ns,
                          os.stat(script).st_mtime_ns)
    try:
        with open(stamp_path, encoding="utf-8") as f:
            fresh = f.read() == stamp and all(os.path.isfile(os.path.join(out, p)) for p in FIGURES)
    except OSError:
        fresh = False
    if fresh:
        return
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        log.warning("matplotlib is missing, so the benchmark figures are not drawn: pip install -e '.[docs]'")
        return
    import subprocess
    import sys

    log.info("drawing the benchmark figures from %s" % os.path.relpath(BENCH_REPORT))
    for name in FIGURES:                # a figure the report has no data for must not survive from another run
        if os.path.isfile(os.path.join(out, name)):
            os.remove(os.path.join(out, name))
    # A process of its own: matplotlib's state (backend, rcParams) stays out of Sphinx's.
    proc = subprocess.run([sys.executable, script, BENCH_REPORT, "--out", out], capture_output=True, text=True,
                          env=dict(os.environ, MPLBACKEND="Agg"))
    if proc.returncode != 0:
        log.warning("docs/plot_bench.py could not plot %s: %s" % (BENCH_REPORT, proc.stderr.strip()[-2000:]))
        return
    with open(stamp_path, "w", encoding="utf-8") as f:
        f.write(stamp)


def setup(app):
    app.connect("builder-inited", _draw_bench_figures)
    app.connect("autodoc-process-signature", _process_signature)
    from docutils import nodes
    from docutils.parsers.rst import directives
    from docutils.parsers.rst.directives.images import Figure

    class BenchFigure(Figure):
        """``.. bench-figure:: _static/bench_x.png``: a figure when the PNG exists, else a note saying how to
        make it (the build draws the PNGs from the reference run; a report without data for a figure, or a
        build without matplotlib, leaves it out).
        """

        option_spec = dict(Figure.option_spec, missing=directives.unchanged)

        def run(self):
            path = os.path.join(HERE, self.arguments[0])
            # Rebuild the page when the figure appears or changes (a missing dependency always rebuilds it).
            self.state.document.settings.env.note_dependency(path)
            if os.path.isfile(path):
                self.options.pop("missing", None)
                return super().run()
            para = nodes.paragraph()
            para += nodes.Text("%s " % (self.options.get("missing") or "Figure not generated yet."))
            para += nodes.literal(text="docs/" + self.arguments[0])
            para += nodes.Text(" was not drawn: the benchmark report (")
            para += nodes.literal(text=os.path.relpath(BENCH_REPORT, os.path.dirname(HERE)))
            para += nodes.Text(") has no data for it, or matplotlib is missing. ")
            para += nodes.literal(text="make docs-plots")
            para += nodes.Text(" runs ")
            para += nodes.literal(text="python -m mpt.bench --peers --format json")
            para += nodes.Text(" and draws the figures again.")
            note = nodes.note()
            note += para
            return [note]

    app.add_directive("bench-figure", BenchFigure)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
