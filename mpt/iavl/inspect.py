"""``python -m mpt inspect`` for IAVL stores: versions, sizes, root hashes and node counts by version.

Works on any store Go iavl or mpt wrote: a LevelDB directory (a Cosmos node's ``application.db``; ``--prefix``
selects a module store, ``s/k:<name>/``) or an LMDB store given ``--iavl``. Nothing is written; note that LevelDB
itself rewrites its log and MANIFEST on open, so point it at a copy of a directory you must keep byte for byte.
"""
import json
import os
from collections import Counter

from mpt.cli import EXIT_FAILURE, CommandError, UsageError
from mpt.db.leveldb_store import LevelDBStore
from mpt.db.lmdb_store import LMDBStore
from mpt.db.memory import prefix_range
from mpt.errors import CorruptTreeError, MissingNodeError, NodeDecodeError, StoreError
from mpt.iavl.nodedb import STORAGE_VERSION_KEY, NodeDB, cosmos_store_names
from mpt.iavl.tree import MutableTree


_NODE_KEY_LENGTH = 13       # b"s" + version (8) + nonce (4)


def inspect_iavl(store):
    """A dict describing the IAVL tree in store: storage version, versions with root hash, size and height,
    stored node and root-record counts by the version in their key, fast and legacy node counts. The latest
    version is walked in full (MissingNodeError / CorruptTreeError if it is damaged)."""
    ndb = NodeDB(store)
    nodes = Counter()
    references = Counter()
    empty_roots = Counter()
    node_bytes = 0
    for key, value in store.iterate(*prefix_range(b"s")):
        if len(key) != _NODE_KEY_LENGTH:
            continue
        version = int.from_bytes(key[1:9], "big")
        if key[9:] == b"\x00\x00\x00\x01" and (not value or value[:1] == b"s"):
            (references if value else empty_roots)[version] += 1
            continue
        nodes[version] += 1
        node_bytes += len(key) + len(value)
    fast = sum(1 for _ in store.iterate(*prefix_range(b"f")))
    legacy = sum(1 for _ in store.iterate(*prefix_range(b"n")))
    tree = MutableTree(store, fast_storage=False)       # reads only: no fast-storage upgrade on load
    versions = []
    for v in ndb.available_versions():
        tree.load_version(v)
        versions.append({
            "version": v,
            "root": tree.hash().hex(),
            "size": len(tree),
            "height": tree.height,
            "root_record": "empty" if empty_roots[v] else ("reference" if references[v] else "node"),
            "nodes_created": nodes.get(v, 0),
        })
    if versions:
        # The latest version is walked in full: every stored node of it is read and checked (heights, sizes,
        # references), so a damaged store fails here rather than in a node that reads it.
        tree = MutableTree(store, fast_storage=False)
        tree.load_version(versions[-1]["version"])
        walked = sum(1 for _ in tree.items())
        if walked != versions[-1]["size"]:
            raise CorruptTreeError("version %d holds %d keys, but its root says %d"
                                   % (versions[-1]["version"], walked, versions[-1]["size"]))
    raw = store.get(STORAGE_VERSION_KEY)
    return {
        "storage_version": None if raw is None else raw.decode("latin-1"),
        "latest_version": ndb.latest_version(),
        "available_versions": [row["version"] for row in versions],
        "versions": versions,
        "nodes": sum(nodes.values()),
        "nodes_by_version": {str(v): n for v, n in sorted(nodes.items())},
        "node_bytes": node_bytes,
        "fast_nodes": fast,
        "legacy_nodes": legacy,
    }


def looks_like_iavl(store):
    """Whether store holds IAVL records (a storage-version record, a node or root key ``s`` + version + nonce,
    or a legacy root ``r`` + version): three seeks, no scan. An Ethereum trie's keys are 32-byte hashes."""
    if store.get(STORAGE_VERSION_KEY) is not None:
        return True
    for low, high, length in ((b"s", b"t", _NODE_KEY_LENGTH), (b"r", b"s", 9)):
        first = next(iter(store.iterate(low, high)), None)
        if first is not None and len(first[0]) == length:
            return True
    return False


def module_stores(store, limit=100):
    """The module-store prefixes (``s/k:<name>/``, as text) of a Cosmos multistore, one seek each."""
    return ["s/k:%s/" % name for name in cosmos_store_names(store, limit)]


def format_table(stats, store_desc):
    out = ["iavl   %s" % store_desc,
           "storage version  %s" % (stats["storage_version"] or "(none: fast storage off)"),
           "latest version   %d" % stats["latest_version"],
           "",
           "%-8s %-64s %10s %6s %-9s %10s" % ("version", "root hash", "size", "height", "root", "new nodes")]
    for row in stats["versions"]:
        out.append("%-8d %-64s %10d %6d %-9s %10d" % (row["version"], row["root"], row["size"], row["height"],
                                                    row["root_record"], row["nodes_created"]))
    pruned = {v: n for v, n in stats["nodes_by_version"].items() if int(v) not in stats["available_versions"]}
    if pruned:
        out.append("")
        out.append("nodes kept from pruned versions: %s" % ", ".join("v%s: %d" % kv for kv in pruned.items()))
    out.append("")
    out.append("nodes %d (%d bytes with keys), fast nodes %d, legacy nodes %d" % (
        stats["nodes"], stats["node_bytes"], stats["fast_nodes"], stats["legacy_nodes"]))
    return "\n".join(out)


def add_arguments(parser):
    """The IAVL options of ``python -m mpt inspect``."""
    parser.add_argument("--iavl", action="store_true",
                        help="the store holds an IAVL tree (implied for a LevelDB directory)")
    parser.add_argument("--prefix", metavar="TEXT", default="",
                        help="key prefix of one module store in a Cosmos multistore LevelDB, e.g. 's/k:bank/'")


def wants_iavl(args):
    """Whether ``inspect`` is about an IAVL store: --iavl, --prefix, or a LevelDB directory (it has CURRENT)."""
    return bool(args.iavl or args.prefix) or (
        os.path.isfile(os.path.join(args.db, "CURRENT")) and not os.path.isfile(os.path.join(args.db, "data.mdb")))


def _refuse_multistore(path):
    """A Cosmos node's application.db holds one IAVL tree per module under s/k:<name>/: without --prefix there is
    no tree to show, so name the module stores found."""
    try:
        with LevelDBStore(path, readonly=True) as store:
            prefixes = module_stores(store)
    except (ImportError, StoreError):
        return                      # the open below reports it
    if prefixes:
        names = ", ".join(prefixes)
        raise UsageError("%s is a Cosmos multistore: pass --prefix with one of its %d module stores: %s"
                         % (path, len(prefixes), names))


def run_inspect(args):
    """The IAVL half of ``python -m mpt inspect``; raises mpt.cli's UsageError / CommandError on errors."""
    leveldb = not os.path.isfile(os.path.join(args.db, "data.mdb"))
    if leveldb and not args.prefix:
        _refuse_multistore(args.db)
    try:
        if leveldb:
            store = LevelDBStore(args.db, readonly=True, prefix=os.fsencode(args.prefix))
            kind = "LevelDB"
        else:
            if args.prefix:
                raise UsageError("--prefix selects a module store of a LevelDB; %s is an LMDB store" % args.db)
            store = LMDBStore(args.db, readonly=True, hash_keys=False)
            kind = "LMDB"
    except (ImportError, StoreError) as e:
        raise UsageError(str(e)) from None
    try:
        stats = inspect_iavl(store)
    except MissingNodeError as e:
        raise CommandError("the IAVL store is incomplete: %s" % e, EXIT_FAILURE) from None
    except NodeDecodeError as e:
        raise CommandError("the IAVL store is corrupt: %s" % e, EXIT_FAILURE) from None
    finally:
        store.close()
    if not stats["versions"] and not stats["nodes"]:
        raise UsageError("no IAVL tree in %s%s" % (args.db, " under prefix %r" % args.prefix if args.prefix else ""))
    if args.json:
        print(json.dumps(stats, indent=2))
    else:
        desc = "%s (%s%s)" % (args.db, kind, ", prefix %r" % args.prefix if args.prefix else "")
        print(format_table(stats, desc))
    return 0
