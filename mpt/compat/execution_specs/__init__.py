"""execution-specs at mpt speed: the spec's trie roots computed by mpt, the same ``Root`` for every fork.

``install()`` patches every fork of the installed ``ethereum-execution`` (found at run time under
``ethereum.forks``, and fork modules created later, such as the transition tool's cloned forks, as they are
imported): each fork's ``trie.root`` and ``state.state_root`` run mpt-backed bodies that return the identical
``Root``. Everything else stays the spec's. ``uninstall()`` undoes it; ``patched()`` is the context manager::

    from mpt.compat import execution_specs
    with execution_specs.patched():
        ...   # the spec, its t8n or a test filler running it in-process

Leaf values are encoded by compiled code for each fork's ``Account``, ``U256`` and ``Bytes`` types (proven equal to
the fork's ``encode_node`` when the fork is patched), by the fork's own ``encode_node`` for anything else. Roots
asked again are brought up to date from the keys written since (see ``_fast``); any input the compiled path does
not take exactly (a value the fork cannot encode, a key of the wrong length, a state inside a transaction) runs
the spec's own code, which computes the root or raises as it always did.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import importlib.abc
import importlib.util
import inspect
import pkgutil
import re
import sys
import threading
import types
import warnings
from typing import Any, Dict, Iterator, List, Optional

from mpt.errors import MissingExtraError, MptError

from . import _fast, _stubs
from ._stubs import SPEC_GLOBAL

__all__ = ["SpecShapeError", "install", "uninstall", "installed", "patched", "patched_forks", "stats", "forget",
           "original"]

INSTALL_HINT = 'pip install "mpt-engine[spec]"'

_FORK_MODULE = re.compile(r"^ethereum\.forks\.([A-Za-z_][A-Za-z0-9_]*)\.(trie|state)$")


class SpecShapeError(MptError, TypeError):
    """A fork module of the installed execution-specs that does not have the shape this layer patches (the message
    names the module and what it lacks); nothing was patched."""


@dataclasses.dataclass
class _Patch:
    module: types.ModuleType
    function: types.FunctionType
    spec_code: types.CodeType
    codec: Any


_lock = threading.RLock()
_patches: Dict[str, _Patch] = {}        # module name -> what was patched there
_finder: Optional["_PatchingFinder"] = None


# ------------------------------------------------------------------------------------------------- shape checks

def _params(function) -> List[tuple]:
    return [(p.name, p.default) for p in inspect.signature(function).parameters.values()]


def _field_names(cls) -> List[str]:
    return [f.name for f in dataclasses.fields(cls)] if dataclasses.is_dataclass(cls) else []


def _trie_module_problems(tm) -> List[str]:
    problems = []
    root = getattr(tm, "root", None)
    if not isinstance(root, types.FunctionType):
        problems.append("a function root(trie, get_storage_root=None)")
    elif root.__code__ is not _stubs.root.__code__ and (
            _params(root) != [("trie", inspect.Parameter.empty), ("get_storage_root", None)]
            or root.__code__.co_freevars):
        problems.append("root(trie, get_storage_root=None) with that signature (it has %s)" % inspect.signature(root))
    trie = getattr(tm, "Trie", None)
    if not isinstance(trie, type) or _field_names(trie)[:3] != ["secured", "default", "_data"]:
        problems.append("a dataclass Trie with the fields secured, default, _data")
    for name in ("encode_node", "copy_trie", "trie_set", "trie_get"):
        if not callable(getattr(tm, name, None)):
            problems.append("a function %s" % name)
    account = getattr(tm, "Account", None)
    if not isinstance(account, type) or not {"nonce", "balance", "code"} <= set(_field_names(account)):
        problems.append("the fork's Account (a dataclass with nonce, balance and code)")
    for name in ("Address", "Root"):
        if not (isinstance(getattr(tm, name, None), type) and issubclass(getattr(tm, name), bytes)):
            problems.append("the fork's %s type (a bytes type)" % name)
    return problems


def _state_module_problems(sm, tm) -> List[str]:
    problems = []
    state_root = getattr(sm, "state_root", None)
    if not isinstance(state_root, types.FunctionType):
        problems.append("a function state_root(state)")
    elif state_root.__code__ is not _stubs.state_root.__code__ and (
            _params(state_root) != [("state", inspect.Parameter.empty)] or state_root.__code__.co_freevars):
        problems.append("state_root(state) with that signature (it has %s)" % inspect.signature(state_root))
    state = getattr(sm, "State", None)
    if not isinstance(state, type) or not {"_main_trie", "_storage_tries", "_snapshots"} <= set(_field_names(state)):
        problems.append("a dataclass State with the fields _main_trie, _storage_tries, _snapshots")
    if tm is not None and getattr(sm, "root", None) is not getattr(tm, "root", None):
        problems.append("state roots computed through %s.root" % tm.__name__)
    return problems


# ------------------------------------------------------------------------------------------------------ codecs

def _spec_copy(function: types.FunctionType) -> types.FunctionType:
    """The spec's function as it was: its own code, globals and defaults (kept to run on inputs we pass on)."""
    copy = types.FunctionType(function.__code__, function.__globals__, function.__name__, function.__defaults__,
                              function.__closure__)
    copy.__kwdefaults__ = function.__kwdefaults__
    copy.__qualname__ = function.__qualname__
    copy.__annotations__ = dict(function.__annotations__)
    copy.__doc__ = function.__doc__
    copy.__module__ = function.__module__
    return copy


def _make_codec(tm):
    """The fork's ForkCodec, with a compiled fast path only for the types whose encoding equals encode_node's."""
    from ethereum_types import bytes as spec_bytes
    from ethereum_types import numeric

    encode_node = tm.encode_node
    u256 = getattr(tm, "U256", numeric.U256)
    uint = getattr(tm, "Uint", numeric.Uint)
    account = tm.Account
    bytes_types = []
    for cls in vars(spec_bytes).values():
        if isinstance(cls, type) and issubclass(cls, spec_bytes.Bytes) and not getattr(cls, "__abstractmethods__", 0):
            sample = bytes(range(getattr(cls, "LENGTH", 7)))
            try:
                value = cls(sample)
                ok = encode_node(value) == sample and isinstance(encode_node(value), bytes)
            except Exception:  # noqa: BLE001 - a type this fork does not encode as itself keeps encode_node
                ok = False
            if ok:
                bytes_types.append(cls)

    def codec(fast_account: bool, fast_u256: bool):
        return _fast.ForkCodec(tm.__name__.rpartition(".")[0], tm.Trie, tm.Root, tm.Address, account, uint, u256,
                               encode_node, bytes_types, fast_account, fast_u256, _spec_copy(tm.root))

    trial = codec(True, True)
    numbers = [0, 1, 0x7F, 0x80, 0xFF, 0x100, 2**56 - 1, 2**64 - 1, 2**64, 2**255 + 12345, 2**256 - 1]
    try:
        fast_u256 = all(_fast.leaf_encoding(trial, u256(n)) == encode_node(u256(n)) for n in numbers)
    except Exception:  # noqa: BLE001 - the fork encodes U256 some other way: leave it to encode_node
        fast_u256 = False
    try:
        root = bytes(range(32))
        fast_account = all(
            _fast.account_encoding(trial, a, root) == encode_node(a, root)
            for a in (account(nonce=uint(n), balance=u256(b), code=c)
                      for n, b, c in [(0, 0, b""), (1, 2**255 + 1, b"\x60\x00" * 40), (2**64 - 1, 0x80, b"\x00"),
                                      (2**70, 2**256 - 1, bytes(600))]))
    except Exception:  # noqa: BLE001 - an Account of another shape: encode_node encodes it
        fast_account = False
    return codec(fast_account, fast_u256)


# ---------------------------------------------------------------------------------------------------- patching

def _swap(module, name: str, stub, codec) -> None:
    function = getattr(module, name)
    if module.__name__ in _patches:
        return
    setattr(module, SPEC_GLOBAL, codec)
    _patches[module.__name__] = _Patch(module, function, function.__code__, codec)
    function.__code__ = stub.__code__


def _patch_fork(tm, sm) -> None:
    """Patch one fork's trie module (and its state module, when given). Shapes were checked by the caller."""
    if tm.__name__ not in _patches:
        _swap(tm, "root", _stubs.root, _make_codec(tm))
    codec = _patches[tm.__name__].codec
    if sm is not None and sm.__name__ not in _patches:
        codec.state_hook = None
        codec.set_state(sm.State, _spec_copy(sm.state_root))
        _swap(sm, "state_root", _stubs.state_root, codec)
    elif sm is None and codec.state_type is None:
        codec.state_hook = _late_state_module


def _late_state_module(codec) -> None:
    """The codec's first roots: patch the fork's state module if it was imported around our finder."""
    with _lock:
        package = codec.name
        sm = sys.modules.get(package + ".state")
        tm = sys.modules.get(package + ".trie")
        if _finder is None or sm is None or tm is None or getattr(sm, "State", None) is None:
            return
        codec.state_hook = None
        problems = _state_module_problems(sm, tm)
        if problems:
            warnings.warn("mpt.compat.execution_specs: %s left unpatched (it lacks %s)"
                          % (sm.__name__, "; ".join(problems)), RuntimeWarning, stacklevel=3)
            return
        _patch_fork(tm, sm)


def _fork_packages() -> List[str]:
    """The fork packages of the installed spec (those under ethereum.forks with a trie module)."""
    try:
        forks = importlib.import_module("ethereum.forks")
    except ImportError as e:
        raise MissingExtraError("mpt.compat.execution_specs needs execution-specs (ethereum-execution, Python >= "
                                "3.11): %s (%s)" % (INSTALL_HINT, e)) from e
    names = [info.name for info in pkgutil.iter_modules(forks.__path__, "ethereum.forks.") if info.ispkg]
    return sorted(name for name in names if importlib.util.find_spec(name + ".trie") is not None)


def _run_time_forks(installed: List[str]) -> List[tuple]:
    """(trie module, state module or None) of forks created at run time (the t8n's clones) and imported before
    install(): patched as far as they are loaded (their folders may be gone by now)."""
    out = []
    for name in sorted(m for m in list(sys.modules) if _FORK_MODULE.match(m) and m.endswith(".trie")):
        package = name.rpartition(".")[0]
        if package not in installed and name not in _patches and not _trie_module_problems(sys.modules[name]):
            sm = sys.modules.get(package + ".state")
            if sm is not None and _state_module_problems(sm, sys.modules[name]):
                sm = None
            out.append((sys.modules[name], sm))
    return out


def install() -> None:
    """Patch every fork of the installed execution-specs, and every fork module imported from now on.

    Safe to call again (nothing is patched twice) and after the spec was imported. Raises SpecShapeError, with
    nothing patched, when a fork's trie or state module does not have the expected shape, and MissingExtraError
    when execution-specs is not installed.
    """
    global _finder
    with _lock:
        modules = []
        problems = []
        packages = _fork_packages()
        for package in packages:
            tm = importlib.import_module(package + ".trie")
            sm = importlib.import_module(package + ".state") if importlib.util.find_spec(package + ".state") else None
            found = ["module %s lacks %s" % (tm.__name__, p) for p in _trie_module_problems(tm)]
            if sm is None:
                found.append("package %s has no state module" % package)
            else:
                found += ["module %s lacks %s" % (sm.__name__, p) for p in _state_module_problems(sm, tm)]
            problems += found
            modules.append((tm, sm))
        if problems:
            raise SpecShapeError("execution-specs not patched: " + "; ".join(problems))
        for tm, sm in modules + _run_time_forks(packages):
            _patch_fork(tm, sm)
        if _finder is None:
            _finder = _PatchingFinder()
            sys.meta_path.insert(0, _finder)


def uninstall() -> None:
    """Give every patched function its own code back and stop patching new fork modules. Safe to call again."""
    global _finder
    with _lock:
        if _finder is not None:
            with contextlib.suppress(ValueError):
                sys.meta_path.remove(_finder)
            _finder = None
        for name, patch in list(_patches.items()):
            patch.function.__code__ = patch.spec_code
            with contextlib.suppress(AttributeError):
                delattr(patch.module, SPEC_GLOBAL)
            del _patches[name]


def installed() -> bool:
    """Whether install() is in effect."""
    return _finder is not None


@contextlib.contextmanager
def patched() -> Iterator[None]:
    """install() for the block; undone after it unless it was installed before."""
    before = installed()
    install()
    try:
        yield
    finally:
        if not before:
            uninstall()


def patched_forks() -> List[str]:
    """The fork packages whose roots mpt computes now (``ethereum.forks.<name>``), sorted."""
    with _lock:
        return sorted({p.codec.name for p in _patches.values()})


def stats() -> Dict[str, Dict[str, Any]]:
    """Per patched fork: full builds, incremental syncs, inputs passed on to the spec's own code (fallbacks), and
    which leaf types are encoded by compiled code."""
    with _lock:
        codecs = {p.codec.name: p.codec for p in _patches.values()}
    return {name: {"full_builds": c.full_builds, "syncs": c.syncs, "fallbacks": c.fallbacks,
                   "fast_account": c.fast_account, "fast_u256": c.fast_u256} for name, c in sorted(codecs.items())}


def original(function):
    """The spec's own version of a patched function (``<fork>.trie.root`` or ``<fork>.state.state_root``): its
    original code, run in its module. The original ``state_root`` still calls the module's ``root``, patched or
    not; ``original(trie.root)`` is the spec's root through and through. An unpatched function is returned as is."""
    with _lock:
        for patch in _patches.values():
            if patch.function is function:
                codec = patch.codec
                return codec.spec_root if patch.spec_code.co_name == "root" else codec.spec_state_root
    return function


def forget(trie) -> None:
    """Drop the root cache of a spec ``Trie`` (its next root is built from scratch). Never needed for
    correctness through the spec's API; for code that swaps a trie's ``_data`` for another dict object."""
    _fast.forget(trie)


# ------------------------------------------------------------------------------------- fork modules imported later

def _on_import(module) -> None:
    match = _FORK_MODULE.match(module.__name__)
    if match is None:
        return
    with _lock:
        if _finder is None or module.__name__ in _patches:
            return
        package = module.__name__.rpartition(".")[0]
        if match.group(2) == "trie":
            problems = _trie_module_problems(module)
            tm, sm = module, None
        else:
            tm = sys.modules.get(package + ".trie")
            if tm is None or tm.__name__ not in _patches:
                return
            problems = _state_module_problems(module, tm)
            sm = module
        if problems:
            warnings.warn("mpt.compat.execution_specs: %s left unpatched (it lacks %s)"
                          % (module.__name__, "; ".join(problems)), RuntimeWarning, stacklevel=2)
            return
        _patch_fork(tm, sm)


class _PatchingLoader(importlib.abc.Loader):
    """The spec's own loader, and after it runs a fork's trie or state module, the patch."""

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        _on_import(module)

    def __getattr__(self, name):
        return getattr(self._loader, name)


class _PatchingFinder(importlib.abc.MetaPathFinder):
    """Finds nothing itself: wraps the loader the other finders give for ethereum.forks.<fork>.trie / .state."""

    def find_spec(self, fullname, path, target=None):
        if _FORK_MODULE.match(fullname) is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _PatchingLoader(spec.loader)
        return spec
