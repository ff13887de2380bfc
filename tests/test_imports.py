"""The import graph of the package, parsed from the sources (``import`` and ``cimport``, .py/.pyx/.pxd): imports run
down the layers of docs/architecture.rst, never in a circle, and only optional dependencies are imported inside
functions.

The layers, from the bottom: the core (mpt.core, mpt.errors, the deprecation helper), the stores (mpt.db), the
families (mpt.ethereum, mpt.merkle, mpt.iavl, mpt.ics23), then the applications (the CLIs, mpt.bench, the compat
layers) and the package itself (mpt/__init__.py and the old module paths kept as aliases). A module imports its
own layer or the ones below; families do not import one another, except that the trees which produce ICS23
proofs (mpt.iavl.proof, mpt.merkle.multistore) import ICS23's messages.
"""
import ast
import pathlib
import re

import pytest

from mpt._deprecation import MOVED_MODULES

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "mpt"

# Third-party or platform modules a function may import where it needs them: the optional extras (pyproject.toml)
# and what only some platforms have. Anything else is imported at the top of its module.
OPTIONAL = {"plyvel", "lmdb", "dask", "distributed", "pyarrow", "matplotlib", "tqdm", "Crypto", "fcntl",
            "ethereum_types", "ethereum_spec_tools", "ethereum_rlp", "rlp",
            "_typeshed", "psutil", "trie", "eth_hash", "ethereum", "pymerkle", "asv", "atheris", "numpy"}

# Imports of mpt modules inside functions that are still there, each with why. Nothing else may be added
# without a reason of the same kind.
FUNCTION_LEVEL = {
    ("mpt.ethereum.proof", "mpt.ethereum.rangeproof"): "the deprecated name proof.verify_range_proof (cycle)",
    ("mpt.ics23.wire", "mpt.ics23.verify"): "the deprecated names wire.verify_membership and co. (cycle)",
    # MutableTree's export, import and proofs: cycles (export and proof cimport the tree's nodedb and node).
    ("mpt.iavl.tree", "mpt.iavl.proof"): "import mpt stays cheap: proofs load ICS23 (about 20 ms)",
    # map_proof alone needs ICS23: importing it with mpt.merkle would double the time of `import mpt`.
    ("mpt.merkle.multistore", "mpt.ics23.messages"): "import mpt stays cheap: ICS23 costs about 20 ms",
    # A .pxd has no module level for Python code: its inline share_sha256_backend() imports the binding.
    ("mpt.core._sha256.sha256", "mpt.core._sha256"): "a .pxd's inline function",
    ("mpt.core._sha256.sha256", "mpt.core._sha256.binding"): "a .pxd's inline function",
    # The lazy subpackages of mpt (mpt.iavl, mpt.ics23) and the old module paths.
    ("mpt", "*"): "PEP 562 lazy attributes of the package",
}
# Packages exempt from the rules while another branch settles them (none now).
PENDING = set()

APPLICATIONS = ("mpt.__main__", "mpt._startup", "mpt.cli", "mpt.iavl.cli", "mpt.iavl.inspect", "mpt.ics23.cli",
                "mpt.bench", "mpt.compat")
FAMILIES = ("mpt.ethereum", "mpt.merkle", "mpt.iavl", "mpt.ics23")
CORE = ("mpt.core", "mpt.errors", "mpt._deprecation", "mpt._version")
STORES = ("mpt.db",)
# Families that may import another family's modules (ICS23 is a proof format the other trees produce).
CROSS_FAMILY = {("mpt.iavl", "mpt.ics23"), ("mpt.merkle", "mpt.ics23")}


def _under(name, prefixes):
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def module_name(path):
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer(name):
    if name == "mpt" or _under(name, ALIASES):
        return "package"
    if _under(name, APPLICATIONS):
        return "applications"
    if _under(name, CORE):
        return "core"
    if _under(name, STORES):
        return "stores"
    for family in FAMILIES:
        if _under(name, (family,)):
            return family
    return None


SOURCES = sorted(p for p in PACKAGE.rglob("*") if p.suffix in (".py", ".pyx", ".pxd") and "__pycache__" not in p.parts)
# The old module paths, served by mpt/_deprecation.py's finder (no file of their own).
ALIASES = set(MOVED_MODULES)
MODULES = {module_name(p) for p in SOURCES if p.suffix != ".pxd"} | {module_name(p) for p in SOURCES}

_CY_IMPORT = re.compile(r"^(\s*)(?:from\s+(\.*[\w.]*)\s+c?import\s+(.+)|c?import\s+([\w.]+(?:\s*,\s*[\w.]+)*))")


def _resolve(importer, is_package, target, level):
    if level:
        base = importer.split(".")
        if not is_package:
            base = base[:-1]
        base = base[:len(base) - (level - 1)]
        return ".".join(base + ([target] if target else []))
    return target


def _targets(base, names):
    """The modules an import names: base, or base.name where that is a module."""
    out = [base]
    for name in names:
        name = name.strip().split(" as ")[0].strip("() \\")
        if name and f"{base}.{name}" in MODULES:
            out.append(f"{base}.{name}")
    return out


def imports_of(path):
    """[(imported module, at module level?, line)] of one source file."""
    name = module_name(path)
    is_package = path.stem == "__init__"
    found = []
    if path.suffix == ".py":
        tree = ast.parse(path.read_text())
        type_checking = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                type_checking.update(id(n) for n in ast.walk(node))
        top = {id(n) for n in tree.body}
        for node in ast.walk(tree):
            if id(node) in type_checking:
                continue
            if isinstance(node, ast.Import):
                for alias in node.names:
                    found.append((alias.name, id(node) in top, node.lineno))
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(name, is_package, node.module, node.level)
                for target in _targets(base, [a.name for a in node.names]):
                    found.append((target, id(node) in top, node.lineno))
        return found
    in_docstring = False
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.count('"""') % 2:
            in_docstring = not in_docstring
            continue
        if in_docstring:
            continue
        m = _CY_IMPORT.match(line)
        if not m:
            continue
        indent, base, names, plain = m.groups()
        at_top = indent == ""
        if plain:
            for target in plain.split(","):
                found.append((target.strip(), at_top, number))
        else:
            level = len(base) - len(base.lstrip("."))
            resolved = _resolve(name, is_package, base.lstrip(".") or None, level)
            for target in _targets(resolved, names.split(",")):
                found.append((target, at_top, number))
    return found


GRAPH = {}          # module -> {imported mpt module: line} at module level
INNER = []          # (module, imported, line) inside functions
for _path in SOURCES:
    _name = module_name(_path)
    for _target, _at_top, _line in imports_of(_path):
        if _at_top:
            if (_target == "mpt" or _target.startswith("mpt.")) and _target != _name:
                GRAPH.setdefault(_name, {})[_target] = _line
        else:
            INNER.append((_name, _target, _line))


def _parent_packages(importer, target):
    """The packages Python initializes before target that the importer is not inside already."""
    parts = target.split(".")
    return [".".join(parts[:i]) for i in range(2, len(parts))
            if not _under(importer, (".".join(parts[:i]),))]


def test_the_parser_sees_imports_and_cimports():
    assert "mpt.ethereum.node" in GRAPH["mpt.ethereum.hasher"]            # a cimport
    assert "mpt.core.jsonrpc" in GRAPH["mpt.ics23.abci"]                  # an import
    assert any(t == "mpt.ics23.messages" for m, t, _ in INNER if m == "mpt.merkle.multistore")


def test_no_import_circle():
    edges = {m: set(targets) | {p for t in targets for p in _parent_packages(m, t)} for m, targets in GRAPH.items()}
    state, stack = {}, []

    def visit(m):
        state[m] = "open"
        stack.append(m)
        for t in sorted(edges.get(m, ())):
            if state.get(t) == "open":
                raise AssertionError("import circle: " + " -> ".join(stack[stack.index(t):] + [t]))
            if t not in state:
                visit(t)
        stack.pop()
        state[m] = "done"

    for module in sorted(edges):
        if module not in state:
            visit(module)


def test_imports_run_down_the_layers():
    order = {"core": 0, "stores": 1, "mpt.ethereum": 2, "mpt.merkle": 2, "mpt.iavl": 2, "mpt.ics23": 2,
             "applications": 3, "package": 4}
    wrong = []
    for module, targets in GRAPH.items():
        if _under(module, PENDING):
            continue
        here = layer(module)
        assert here is not None, f"{module}: not in a layer of tests/test_imports.py (add its package)"
        for target, line in targets.items():
            there = layer(target)
            if target == "mpt" and here in ("applications", "package"):
                continue        # the applications use the public API
            if there == "package":
                wrong.append(f"{module}:{line} imports {target}: the package or an old module path")
            elif order[there] > order[here]:
                wrong.append(f"{module}:{line} imports {target}, a layer above it ({there})")
            elif order[there] == order[here] == 2 and here != there and (here, there) not in CROSS_FAMILY:
                wrong.append(f"{module}:{line} imports {target}: families do not import one another")
    assert not wrong, "\n".join(wrong)


def test_imports_inside_functions_are_optional_dependencies_or_listed():
    wrong = []
    for module, target, line in INNER:
        if _under(module, PENDING) or _under(module, ("mpt.bench",)):
            continue
        if target.split(".")[0] in OPTIONAL:
            continue
        if (module, target) in FUNCTION_LEVEL or (module, "*") in FUNCTION_LEVEL:
            continue
        wrong.append(f"{module}:{line} imports {target} inside a function")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("pair", sorted(k for k in FUNCTION_LEVEL if k[1] != "*"), ids=lambda p: "->".join(p))
def test_every_listed_exception_is_still_needed(pair):
    assert any((m, t) == pair for m, t, _ in INNER), f"{pair} is no longer imported inside a function: unlist it"


def _private_names():
    """(module, line, imported name) of every ``from mpt.x import _name`` / ``cimport _name`` of a name that is
    not a module, from a module other than mpt.x."""
    out = []
    for path in SOURCES:
        name = module_name(path)
        if _under(name, ("mpt.bench",)) or name in ALIASES:
            continue
        lines = path.read_text().splitlines()
        i = 0
        while i < len(lines):
            m = re.match(r"^\s*from\s+(mpt[\w.]*)\s+c?import\s+(.*)$", lines[i])
            if m:
                base, rest, start = m.group(1), m.group(2), i
                while rest.count("(") > rest.count(")") and i + 1 < len(lines):
                    i += 1
                    rest += " " + lines[i]
                for item in rest.split("#")[0].replace("(", " ").replace(")", " ").split(","):
                    imported = item.strip().split(" as ")[0].strip()
                    if (imported.startswith("_") and not imported.startswith("__")
                            and f"{base}.{imported}" not in MODULES and base != name):
                        out.append((name, start + 1, f"{base}.{imported}"))
            i += 1
    return out


# Private names still imported across modules, each with why.
PRIVATE_NAMES = {
    ("mpt.ethereum.parallel", "mpt.ethereum.shards.build._ShardResult"): "a type for annotations only",
}


def test_no_private_name_crosses_a_module():
    """What another module needs has a public name (or is declared in a .pxd under one)."""
    wrong = [f"{m}:{line} imports {target}" for m, line, target in _private_names()
             if (m, target) not in PRIVATE_NAMES and not _under(m, PENDING)]
    assert not wrong, "\n".join(wrong)


# The private attributes (fields, methods) each module gives its objects: `def _x(` / `cdef ... _x(` methods,
# `self._x = ...` attributes and `cdef` field declarations (a .pxd's class layout included).
_DEFINES = [
    re.compile(r"^\s+(?:c?p?def\s+(?:inline\s+)?(?:[\w*\[\]]+\s+)*?)(_[a-z]\w*)\s*\(", re.M),
    re.compile(r"\bself\.(_[a-z]\w*)\s*(?::[^=]+)?=[^=]"),
    re.compile(r"^\s+(?:cdef\s+)?(?:readonly\s+|public\s+)?[\w\[\]]+[\s*]+(_[a-z]\w*)\s*(?:#.*)?$", re.M),
]
_ATTRIBUTE = re.compile(r"(\w+(?:\.\w+)*)\.(_[a-z]\w*)\b")

# Private attributes of objects that are not mpt's, read on purpose, each with why.
FOREIGN_PRIVATES = {
    ("mpt.compat.execution_specs._fast", "_data"): "execution-specs' Trie keeps its mapping in the field _data",
    ("mpt.bench.cases.execution_specs", "_data"): "the same field, filled in for the benchmark's state",
}

# Modules another branch is changing now, which settles their uses then (remove the entry with the merge).
PENDING_PRIVATES = set()


def _private_attribute_uses():
    """(module, line, `obj._x`, owners) where obj._x reaches a private attribute another mpt module defines
    (and the module does not define one of that name itself)."""
    defined = {}
    for path in SOURCES:
        text = path.read_text()
        names = defined.setdefault(module_name(path), set())
        for pattern in _DEFINES:
            names.update(pattern.findall(text))
    owners = {}
    for module, names in defined.items():
        for attr in names:
            owners.setdefault(attr, set()).add(module)
    out = []
    for path in SOURCES:
        module = module_name(path)
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for m in _ATTRIBUTE.finditer(line.split("#")[0]):
                obj, attr = m.groups()
                if (obj in ("self", "cls") or attr not in owners or module in owners[attr]
                        or f"{obj}.{attr}" in MODULES | ALIASES or (module, attr) in FOREIGN_PRIVATES
                        or _under(module, PENDING_PRIVATES)):
                    continue
                out.append((module, number, f"{obj}.{attr}", sorted(owners[attr])))
    return out


def test_the_scan_for_private_attributes_sees_a_field_reached_from_another_module():
    # The iavl tree once read NodeDB._latest: a line like it must be found.
    line = "        if self.version == self.ndb._latest:"
    assert _ATTRIBUTE.findall(line) == [("self.ndb", "_latest")]
    assert "_latest" in set(_DEFINES[2].findall("    cdef:\n        int64_t _latest   # cached\n"))


def test_no_private_attribute_of_another_module_is_reached():
    """Fast paths across modules are declared (a .pxd's inline function or cdef method, a public name), never a
    private field or method of another module's object."""
    wrong = [f"{m}:{line} reaches {use} (private to {', '.join(owners)})"
             for m, line, use, owners in _private_attribute_uses()]
    assert not wrong, "\n".join(wrong)


# One encoder (issue 34): every writer of trie node encodings (Node.encode, the hashing pass, the node arena,
# StackTrie, the range proof's leaf batch, execution-specs' compiled tries) writes a node's list header, its
# hashed children's references and its compact keys through mpt/ethereum/node_enc.pxd and encoding.pxd.
_NODE_WRITERS_ALLOWED = {
    # (file, line text): RLP lists that are not trie nodes
    ("compat/execution_specs/_fast.pyx", "h = put_header(out, 0xc0, n)"): "an account's RLP list",
    ("compat/pytrie/_core.pyx", "out += put_header(out, 0xc0, payload)"): "py-trie's raw nodes: any RLP list",
    ("compat/pytrie/_core.pyx", "q += put_header(q, 0xc0, payload)"): "a py-trie node spliced byte by byte",
    ("compat/execution_specs/_fast.pyx", "body[n] = 0xa0"): "an account's storage root string",
    ("compat/execution_specs/_fast.pyx", "body[n + 33] = 0xa0"): "an account's code hash string",
}


def test_node_encodings_are_written_by_node_enc_only():
    list_header = re.compile(r"put_header(_before)?\([^,]+,\s*0x[cC]0\b")
    hash_string = re.compile(r"\]\s*=\s*(0xa0|0x80 \+ (32|HASH_LENGTH))\b")
    compact_flag = re.compile(r"\(flag (\||\+) (1|COMPACT_ODD_FLAG)\) << 4|0x30 \|")
    found = []
    for path in sorted(PACKAGE.rglob("*.p[xy][xd]")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel in ("ethereum/node_enc.pxd", "ethereum/encoding.pxd") or rel.startswith(
                ("core/", "iavl/", "merkle/", "ics23/")):
            continue                # the writers themselves, generic RLP, the other families' formats
        for line in path.read_text().splitlines():
            text = line.strip()
            if (list_header.search(text) or hash_string.search(text) or compact_flag.search(text)) \
                    and (rel, text) not in _NODE_WRITERS_ALLOWED:
                found.append("%s: %s" % (rel, text))
    assert found == []
    for rel, text in _NODE_WRITERS_ALLOWED:
        assert text in (PACKAGE / rel).read_text(), (rel, text)
