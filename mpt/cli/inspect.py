"""``python -m mpt inspect --db PATH [--root HEX] [--json]``: node counts of an Ethereum trie in an LMDB store, or
(``--iavl``, implied for a LevelDB directory) the versions of an IAVL tree (:mod:`mpt.iavl.inspect`).

Exit status: 0 on success, 1 if the trie is missing nodes or holds corrupt ones, 2 for bad arguments, no store at
the path or no root to inspect.
"""
import json
import os
import sys

from mpt.cli import EXIT_FAILURE, CommandError, UsageError
from mpt.db.lmdb_store import LMDBStore
from mpt.errors import MissingNodeError, NodeDecodeError, StoreError
from mpt.ethereum.inspect import inspect_trie
from mpt.iavl.inspect import add_arguments as add_iavl_arguments
from mpt.iavl.inspect import looks_like_iavl, run_inspect, wants_iavl



def add_parser(subparsers):
    p = subparsers.add_parser(
        "inspect",
        help="count the nodes of a stored trie by type and depth",
        description="Walk the Ethereum trie under a root in an LMDB node store (opened read-only) and print how "
                    "many branch, extension and leaf nodes it has, stored and embedded, the depth histogram, the "
                    "number of values and the bytes of its stored nodes. With --iavl (implied for a LevelDB "
                    "directory), list the versions of an IAVL tree instead: root hash, size and height of each.",
        epilog="Exit status: 0 on success, 1 if the trie is missing nodes or holds corrupt ones, "
               "2 for bad arguments or an unreadable store.",
    )
    p.add_argument("--db", required=True, metavar="PATH",
                   help="the store directory: an LMDB store (an Ethereum trie, or an IAVL tree with --iavl) or a "
                        "LevelDB directory (an IAVL tree, e.g. a Cosmos node's application.db)")
    p.add_argument("--root", metavar="HEX",
                   help="Ethereum trie: the root hash to inspect, 64 hex digits with or without 0x (default: the "
                        "store's head); an IAVL store lists every version's root instead")
    p.add_argument("--json", action="store_true", help="print the counts as JSON instead of a table")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")

    add_iavl_arguments(p)
    return p


def _parse_root(text):
    s = text[2:] if text[:2] in ("0x", "0X") else text
    try:
        root = bytes.fromhex(s)
    except ValueError:
        raise UsageError("--root %r is not hex" % text) from None
    if len(root) != 32:
        raise UsageError("--root must be a 32-byte hash (64 hex digits), got %d bytes" % len(root))
    return root


def _human(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return ("%d %s" % (n, unit)) if unit == "B" else ("%.1f %s" % (n, unit))
        n /= 1024.0


def _table(stats, store_desc):
    out = []
    out.append("trie   0x%s" % stats["root"])
    out.append("store  %s" % store_desc)
    out.append("")
    out.append("%-10s %12s %12s" % ("node type", "stored", "embedded"))
    for kind in ("branch", "extension", "leaf"):
        out.append("%-10s %12d %12d" % (kind, stats[kind], stats["embedded_" + kind]))
    out.append("%-10s %12d %12d" % ("total", stats["nodes"], stats["embedded"]))
    out.append("")
    out.append("values     %12d" % stats["values"])
    out.append("bytes      %12d  (%s in stored node blobs)" % (stats["bytes"], _human(stats["bytes"])))
    out.append("max depth  %12d" % stats["max_depth"])
    if stats["depths"]:
        out.append("")
        out.append("%-6s %10s %10s %10s %10s" % ("depth", "branch", "extension", "leaf", "values"))
        for depth, row in enumerate(stats["depths"]):
            out.append("%-6d %10d %10d %10d %10d" % (depth, row["branch"], row["extension"], row["leaf"],
                                                     row["values"]))
    return "\n".join(out)


def run(args):
    root = _parse_root(args.root) if args.root is not None else None
    if not os.path.isdir(args.db):
        raise UsageError("no store at %s (expected an LMDB store, a directory holding data.mdb, or a LevelDB "
                         "directory)" % args.db)
    if wants_iavl(args):
        if root is not None:
            raise UsageError("--root selects an Ethereum trie; an IAVL store has a root per version, and inspect "
                             "lists them all (leave out --root)")
        return run_inspect(args)
    if not os.path.isfile(os.path.join(args.db, "data.mdb")):
        raise UsageError("%s is not an LMDB store (no data.mdb in it)" % args.db)
    try:
        store = LMDBStore(args.db, readonly=True)
    except (ImportError, StoreError) as e:     # no lmdb package; not an LMDB store, incompatible, damaged
        raise UsageError(str(e)) from None
    except Exception as e:      # lmdb.Error: locked, no permission
        raise UsageError("cannot open %s: %s" % (args.db, e)) from None
    try:
        if store.head() is None and looks_like_iavl(store):
            raise UsageError("%s holds an IAVL tree, not an Ethereum trie: pass --iavl" % args.db)
        if root is None:
            root = store.head()
            if root is None:
                raise UsageError("%s records no head root; pass --root" % args.db)
        stored = len(store)
        bar = None
        if not args.no_progress:
            try:
                from tqdm import tqdm
            except ImportError:     # the bar is a nicety: inspect without it
                tqdm = None
            if tqdm is not None:
                # Shown only on a terminal and only once the walk has taken a second: small tries stay quiet.
                bar = tqdm(total=None, unit=" nodes", file=sys.stderr, delay=1.0, disable=None, leave=False)
        try:
            stats = inspect_trie(store, root, progress=bar.update if bar is not None else None)
        except MissingNodeError as e:
            raise CommandError("trie 0x%s is incomplete: %s" % (root.hex(), e), EXIT_FAILURE) from None
        except NodeDecodeError as e:
            raise CommandError("trie 0x%s is corrupt: %s" % (root.hex(), e), EXIT_FAILURE) from None
        finally:
            if bar is not None:
                bar.close()
    finally:
        store.close()
    if args.json:
        print(json.dumps(stats, indent=2))
    else:
        print(_table(stats, "%s (LMDB, %d nodes stored in all)" % (args.db, stored)))
