"""``python -m mpt iavl export|import``: an IAVL tree's export stream as JSON lines (the state-sync path).

``python -m mpt iavl export DB [--version V] [-o FILE]`` writes the nodes of saved version V (default: the
latest) in Go's exporter order, one JSON object per line, the shape Go's ``ExportNode`` takes in our vectors::

    {"key":"6b6579","value":"76616c7565","version":1,"height":0}

(``key`` and ``value`` in hex, ``value`` null for inner nodes). ``python -m mpt iavl import DB --version V
[FILE]`` reads such lines (from FILE, or stdin when FILE is missing or ``-``) into an empty tree and saves it as
version V, printing the root hash; FILE may be gzip-compressed. It writes in batches of 10,000 nodes, as Go's
importer does; when it fails it removes what it wrote, and the store folder too if the command created it.

DB is a store directory: an LMDB store (``data.mdb``) or a LevelDB directory (``CURRENT`` and ``MANIFEST-*``, the
format of a Cosmos node's ``application.db``), recognised by its files or named with ``--store``; ``--prefix``
selects one module's store inside a Cosmos multistore (``s/k:bank/``).

Exit status: 0 on success, 1 when the export or import fails (no such version, a stream that is no valid tree, a
store that is not empty, damaged data), 2 for bad arguments or an input that is not a store or not JSON lines.
"""
import argparse
import glob
import json
import os
import re
import sys

from mpt.cli import ArgumentParser, CommandError, UsageError, is_gzip_error, open_text_input
from mpt.db import LevelDBStore, LMDBStore
from mpt.errors import VersionError
from mpt.iavl.export import ExportNode
from mpt.iavl.inspect import module_stores
from mpt.iavl.tree import MutableTree


STORES = ("leveldb", "lmdb")
_LINE = '{"key":"%s","value":%s,"version":%d,"height":%d}\n'
_CHUNK = 4096           # lines written per write() call


def add_parser(subparsers):
    p = subparsers.add_parser(
        "iavl",
        help="export or import an IAVL tree (Cosmos state sync) as JSON lines",
        description="Export a saved version of an IAVL tree as JSON lines in Go iavl's exporter order, or "
                    "import such a stream into an empty store.",
        epilog="Exit status: 0 on success, 1 when the export or import fails (no such version, a stream that "
               "is no valid tree, a store that is not empty, damaged data), 2 for bad arguments or an input "
               "that is not a store or not JSON lines.",
    )
    sub = p.add_subparsers(dest="iavl_command", metavar="ACTION", parser_class=_IntermixedParser)
    sub.required = True

    e = sub.add_parser(
        "export",
        help="write a saved version's nodes as JSON lines",
        description="Write the nodes of a saved version in Go iavl's exporter order (post-order, left subtree "
                    'first), one {"key","value","version","height"} object per line, keys and values in hex.',
    )
    _store_arguments(e)
    e.add_argument("--version", type=_version, metavar="V", help="the version to export (default: the latest)")
    e.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    e.set_defaults(iavl_run=_export)

    i = sub.add_parser(
        "import",
        help="rebuild a tree from JSON lines into an empty store",
        description="Read an export stream (JSON lines as 'export' writes them, gzip-compressed or not) into an "
                    "empty IAVL store and save it as version V with Go iavl's node keys, writing in batches of "
                    "10,000 nodes as Go's importer does (the version appears with the last one; a failed import "
                    "removes what it wrote, and a store folder it created). Prints the root hash.",
    )
    _store_arguments(i)
    i.add_argument("--version", type=_version, required=True, metavar="V",
                   help="the version to save the tree as (at least every node's version)")
    i.add_argument("input", nargs="?", default="-", metavar="FILE",
                   help="the JSON lines, gzip-compressed or not (default: stdin)")
    i.set_defaults(iavl_run=_import)
    return p


class _IntermixedParser(ArgumentParser):
    """Options and positionals in any order: ``import DB --version 6 nodes.jsonl`` (plain argparse would take
    the optional FILE as missing once DB is followed by an option, and then refuse nodes.jsonl). Usage errors are
    one line, as with every command (mpt.cli.ArgumentParser)."""

    _intermixed = False

    def parse_known_args(self, args=None, namespace=None):
        if self._intermixed:        # parse_known_intermixed_args calls back here for its two passes
            return super().parse_known_args(args, namespace)
        self._intermixed = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._intermixed = False


def _store_arguments(p):
    p.add_argument("db", metavar="DB", help="the store directory (LMDB or LevelDB)")
    p.add_argument("--store", choices=STORES,
                   help="the store's kind (default: recognised from its files; needed to create a new store)")
    p.add_argument("--prefix", default="", metavar="TEXT",
                   help="the key prefix of one module store in a Cosmos multistore LevelDB, e.g. s/k:bank/")


def _version(text):
    try:
        v = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not a version number" % text) from None
    if not 1 <= v < 2**63:
        raise argparse.ArgumentTypeError("versions run from 1 to 2**63-1, not %d" % v)
    return v


def run(args):
    return args.iavl_run(args)


# --------------------------------------------------------------------------------------------------- stores

def _detect(path):
    """'lmdb', 'leveldb' or None (an empty or missing directory), from the files in path."""
    if not os.path.exists(path):
        return None
    if not os.path.isdir(path):
        raise UsageError("%s is a file, not a store directory" % path)
    if os.path.isfile(os.path.join(path, "data.mdb")):
        return "lmdb"
    if os.path.isfile(os.path.join(path, "CURRENT")) and glob.glob(os.path.join(glob.escape(path), "MANIFEST-*")):
        return "leveldb"
    if not os.listdir(path):
        return None
    raise UsageError("%s is neither an LMDB store (data.mdb) nor a LevelDB directory (CURRENT, MANIFEST-*)" % path)


def _open_store(args, write):
    found = _detect(args.db)
    kind = args.store or found
    if found is not None and kind != found:
        raise UsageError("%s holds a %s store, not %s" % (args.db, found, kind))
    if kind is None:
        if not write:
            raise UsageError("no store at %s" % args.db)
        raise UsageError("%s does not hold a store yet: pass --store leveldb or --store lmdb to create one" % args.db)
    # The bytes the command line gave (UTF-8, undecodable bytes kept): Cosmos store names are UTF-8.
    prefix = os.fsencode(args.prefix)
    try:
        if kind == "lmdb":
            if prefix:
                raise UsageError("--prefix selects a module store of a LevelDB; %s is an LMDB store" % args.db)
            return LMDBStore(args.db, readonly=not write, hash_keys=False)
        return LevelDBStore(args.db, create=write, readonly=not write, prefix=prefix)
    except CommandError:
        raise
    except ImportError as e:            # the optional package behind the store is missing
        raise UsageError(str(e)) from None
    except Exception as e:              # lmdb.Error, plyvel.Error, ...: unreadable, locked, not a store
        raise UsageError("cannot open %s: %s" % (args.db, e)) from None


# --------------------------------------------------------------------------------------------------- export

def _export(args):
    store = _open_store(args, write=False)
    try:
        tree = MutableTree(store)
        latest = tree.load()
        version = latest if args.version is None else args.version
        if version == 0:
            stores = [] if args.prefix else module_stores(store, limit=20)
            if stores:
                raise UsageError("%s is a Cosmos multistore: pass --prefix with one of its module stores: %s" % (
                    args.db, ", ".join(stores)))
            raise CommandError("%s holds no saved version of an IAVL tree%s" % (
                args.db, " under prefix %r" % args.prefix if args.prefix else ""))
        try:
            nodes = tree.export(version)
        except VersionError:
            raise CommandError("version %d is not in %s (saved versions: %s)" % (
                version, args.db, _ranges(tree.available_versions()))) from None
        out = open(args.output, "w") if args.output else sys.stdout
        try:
            _write_lines(nodes, out)
        finally:
            if args.output:
                out.close()
    finally:
        store.close()
    return 0


def _write_lines(nodes, out):
    lines = []
    for n in nodes:
        lines.append(_LINE % (n.key.hex(), "null" if n.value is None else '"%s"' % n.value.hex(), n.version,
                              n.height))
        if len(lines) == _CHUNK:
            out.write("".join(lines))
            lines.clear()
    out.write("".join(lines))
    out.flush()


def _ranges(versions):
    if not versions:
        return "none"
    parts = []
    start = prev = versions[0]
    for v in versions[1:] + [None]:
        if v is not None and v == prev + 1:
            prev = v
            continue
        parts.append(str(start) if start == prev else "%d-%d" % (start, prev))
        if v is not None:
            start = prev = v
    return ", ".join(parts)


# --------------------------------------------------------------------------------------------------- import

def _import(args):
    name = "<stdin>" if args.input == "-" else args.input
    before = _folder_contents(args.db)
    source = open_text_input(args.input)        # before anything is created: an unreadable FILE changes nothing
    done = False
    try:
        store = _open_store(args, write=True)
        try:
            # Not load(): on an empty store that would already write the fast-storage record, and a refused
            # import must leave the store as it was.
            root = MutableTree(store).import_nodes(_read_lines(source, name), args.version)
        finally:
            store.close()
        done = True
    except UnicodeDecodeError as e:
        raise UsageError("%s: not UTF-8 text (%s)" % (name, e.reason)) from None
    except (OSError, EOFError) as e:
        if is_gzip_error(e):
            raise UsageError("%s: damaged gzip data (%s)" % (name, e)) from None
        raise
    finally:
        source.close()
        if not done:
            _remove_new_store(args.db, before)
    print(root.hex())
    return 0


# The files LMDB (data.mdb, lock.mdb) and LevelDB create in a store folder.
_STORE_FILES = re.compile(r"^(data\.mdb|lock\.mdb|CURRENT|LOCK|LOG|LOG\.old|MANIFEST-\d+|\d+\.(log|ldb|sst|dbtmp))$")


def _folder_contents(path):
    """What path held before the command: None when it did not exist, else the names in it."""
    try:
        return set(os.listdir(path))
    except FileNotFoundError:
        return None
    except OSError:         # a file, or unreadable: _open_store reports it
        return {""}


def _remove_new_store(path, before):
    """After a failed import: remove the store files the command created in a folder that was missing or empty,
    and the folder itself when the command created it. A folder that held anything before is left alone, and so
    is any file the stores do not create."""
    if before:
        return
    try:
        for entry in os.scandir(path):
            if _STORE_FILES.match(entry.name) and entry.is_file(follow_symlinks=False):
                os.remove(entry.path)
        if before is None:
            os.rmdir(path)          # only if nothing else is left in it
    except OSError:
        pass


def _read_lines(source, name):
    for number, line in enumerate(source, 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
            if type(d) is not dict or set(d) != {"key", "value", "version", "height"}:
                raise ValueError('not an object with exactly "key", "value", "version" and "height"')
            value = d["value"]
            if type(d["key"]) is not str or not (value is None or type(value) is str):
                raise ValueError("key must be a hex string and value a hex string or null (0x allowed)")
            if type(d["version"]) is not int or type(d["height"]) is not int:
                raise ValueError("version and height must be integers")
            node = ExportNode(_hex(d["key"]), None if value is None else _hex(value), d["version"], d["height"])
        except ValueError as e:     # json.JSONDecodeError, bad hex, out-of-range fields (ExportImportError)
            raise UsageError("%s line %d: %s" % (name, number, e)) from None
        except RecursionError:      # json.loads of a deeply nested line
            raise UsageError("%s line %d: JSON nested too deeply" % (name, number)) from None
        yield node


def _hex(text):
    """Bytes of a hex string, with or without 0x (as every hex argument of python -m mpt)."""
    return bytes.fromhex(text[2:] if text[:2] in ("0x", "0X") else text)
