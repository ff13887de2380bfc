"""``python -m mpt root``: the trie root of a large input file, on every core (or a Dask cluster).

Formats:

- ``alloc``: a genesis file (geth genesis.json, execution-specs mainnet.json) or a bare alloc object;
- ``geth-dump``: ``geth snapshot dump`` / ``geth dump --iterative`` JSON lines (or geth's single-object dump);
  when the dump names its root, the computed root is compared with it;
- ``pairs-jsonl``: one ``{"key": "0x..", "value": "0x.."}`` object (or ``["0x..", "0x.."]`` pair) per line;
  the three JSON formats may be gzip-compressed (recognised by their first bytes, on stdin too);
- ``parquet``: a Parquet file or directory with binary (or hex string) columns ``key`` and ``value``
  (``--key-column`` / ``--value-column``).

The root is printed as 0x-hex on stdout. Exit status: 0 on success, 1 when a dump's recorded root differs from the
computed one or the build fails (a full disk under ``--spill-dir``), 2 for bad arguments or a malformed input (the
message names the line), 130 when interrupted. An empty input prints the empty trie's root and a note on stderr.
"""
from __future__ import annotations

import argparse
import os
import re
import sys

from mpt.cli import EXIT_FAILURE, UsageError, is_gzip_error, open_text_input
from mpt.core.jsonrpc import parse_data, parse_json_line
from mpt.errors import InputFormatError, MptError
from mpt.ethereum.parallel import MAX_WORKERS, build_root
from mpt.ethereum.state import read_genesis_alloc, read_geth_dump, state_root
from mpt.ethereum.trie import EMPTY_ROOT

FORMATS = ("alloc", "geth-dump", "pairs-jsonl", "parquet")


def add_parser(subparsers):
    p = subparsers.add_parser(
        "root",
        help="compute the trie root of a genesis alloc, a geth state dump, key/value JSON lines or Parquet",
        description="Build the Merkle Patricia Trie root of a large input with mpt.build_root: shards on every "
                    "core without the GIL, spilled to disk beyond --memory-limit when --spill-dir is given, or "
                    "on a Dask cluster with --scheduler. Prints the root as 0x-hex.",
        epilog="Exit status: 0 on success, 1 if a geth dump records a different root or the build fails, 2 for "
               "bad arguments or a malformed input, 130 when interrupted.",
    )
    p.add_argument("input", metavar="INPUT",
                   help="the input file ('-' reads JSON from stdin); JSON inputs may be gzip-compressed")
    p.add_argument("--format", required=True, choices=FORMATS, help="what INPUT holds")
    p.add_argument("--workers", type=_workers, default=None, metavar="N", help="threads (default: the CPU count)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="build the shards on this Dask scheduler (tcp://host:8786); needs mpt-engine[dask]")
    p.add_argument("--spill-dir", metavar="DIR", help="spill partitioned input to files here (bounded memory)")
    p.add_argument("--memory-limit", metavar="BYTES", type=_size, default=None,
                   help="bytes of input held before spilling, e.g. 512M (default 512M; with --spill-dir)")
    p.add_argument("--key-column", default="key", help="parquet: the key column (default: key)")
    p.add_argument("--value-column", default="value", help="parquet: the value column (default: value)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    # argparse takes "-5M" for an option (only plain negative numbers count as values), so "--memory-limit -5M"
    # said "expected one argument"; with sizes counted as values, _size names the real problem.
    p._negative_number_matcher = _NEGATIVE_SIZE
    return p


def _workers(text):
    digits = text[1:] if text.startswith("-") else text
    if not digits.isascii() or not digits.isdigit():    # no "+", spaces, underscores or other digits, as int() takes
        raise argparse.ArgumentTypeError("%r is not a whole number" % text)
    n = int(text)
    if not 1 <= n <= MAX_WORKERS:
        raise argparse.ArgumentTypeError("%s is out of range (1 to %d)" % (text, MAX_WORKERS))
    return n


_NEGATIVE_SIZE = re.compile(r"^-(\d+\.?\d*|\.\d+)([KMGT]i?B?|B)?$", re.IGNORECASE)
_SIZE = re.compile(r"^(\d+\.?\d*|\.\d+)([KMGT])?$")


def _size(text):
    """A byte count like 512M, 2G, 1.5GiB or 1048576 (K, M, G, T are powers of 1024); refuses signs, spaces
    and underscores, as the other number fields do."""
    units = {None: 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    t = text.upper()
    t = t[:-1] if t.endswith("B") else t
    t = t[:-1] if t.endswith("I") and len(t) > 1 and t[-2] in "KMGT" else t
    if text.startswith("-") and _SIZE.match(t[1:]):
        raise argparse.ArgumentTypeError("%r is negative: give a size like 512M or 2G" % text)
    m = _SIZE.match(t)
    if m is None:
        raise argparse.ArgumentTypeError("%r is not a size (like 512M or 2G)" % text)
    try:
        return int(float(m.group(1)) * units[m.group(2)])
    except OverflowError:                   # 400 digits: float() gives inf
        raise argparse.ArgumentTypeError("%r is too large a size" % text) from None


def _hex_field(value, what, number):
    return parse_data(value, "line %d: %s" % (number, what), prefix=None, decoded=False,
                      error=lambda message: InputFormatError(message, line=number))


def read_pairs_jsonl(f):
    """(key, value) pairs of a JSON-lines text file; errors name the line."""
    for number, line in enumerate(f, 1):
        text = line.strip()
        if not text:
            continue
        obj = parse_json_line(text, number)
        if isinstance(obj, dict):
            if "key" not in obj or "value" not in obj:
                raise InputFormatError("line %d: expected an object with \"key\" and \"value\"" % number, line=number)
            key, value = obj["key"], obj["value"]
        elif isinstance(obj, list) and len(obj) == 2:
            key, value = obj
        else:
            raise InputFormatError("line %d: expected {\"key\": .., \"value\": ..} or [key, value]" % number,
                                   line=number)
        yield _hex_field(key, "key", number), _hex_field(value, "value", number)


def read_parquet_pairs(path, key_column="key", value_column="value"):
    """(key, value) pairs of a Parquet file or directory, batch by batch (pyarrow)."""
    try:
        import pyarrow.dataset as ds
    except ImportError:
        raise InputFormatError("reading Parquet needs pyarrow (pip install 'mpt-engine[dask]' or pyarrow)") from None
    dataset = ds.dataset(path, format="parquet")
    names = dataset.schema.names
    for column in (key_column, value_column):
        if column not in names:
            raise InputFormatError("parquet: no column %r (columns: %s)" % (column, ", ".join(names)))
    row = 0
    for batch in dataset.to_batches(columns=[key_column, value_column]):
        keys = batch.column(0).to_pylist()
        values = batch.column(1).to_pylist()
        for key, value in zip(keys, values):
            yield _parquet_cell(key, key_column, row), _parquet_cell(value, value_column, row)
            row += 1


def _parquet_cell(cell, column, row):
    if isinstance(cell, bytes):
        return cell
    if isinstance(cell, str):
        return parse_data(cell, "parquet row %d: column %s" % (row, column), prefix=None, decoded=False,
                          error=lambda message: InputFormatError(message, line=row))
    raise InputFormatError("parquet row %d: column %s must be binary or a hex string, not %s"
                           % (row, column, type(cell).__name__), line=row)


def run(args):
    if args.input != "-" and not os.path.exists(args.input):
        raise UsageError("no such file: %s" % args.input)
    if args.input != "-" and args.format != "parquet" and os.path.isdir(args.input):
        raise UsageError("%s is a directory; --format %s reads a file" % (args.input, args.format))
    if args.input == "-" and args.format == "parquet":
        raise UsageError("parquet input must be a file or directory, not stdin")
    if args.spill_dir is not None and not os.path.isdir(args.spill_dir):
        raise UsageError("--spill-dir %s is not a directory" % args.spill_dir)
    progress = not args.no_progress and sys.stderr.isatty()
    client = None
    if args.scheduler:
        try:
            from distributed import Client
        except ImportError:
            raise UsageError("--scheduler needs dask.distributed (pip install 'mpt-engine[dask]')") from None
        try:
            client = Client(args.scheduler, timeout="10s")
        except Exception as e:      # OSError, TimeoutError: no scheduler there
            raise UsageError("cannot reach the Dask scheduler at %s: %s" % (args.scheduler, e)) from None
    options = dict(workers=args.workers, executor=client, spill_dir=args.spill_dir, memory_limit=args.memory_limit,
                   progress=progress)
    expected = None
    # JSON inputs may be gzip-compressed (a .json.gz, or gzip on stdin): recognised by their first bytes.
    stream = open_text_input(args.input) if args.format != "parquet" else None
    try:
        if args.format == "alloc":
            root = state_root(read_genesis_alloc(stream), **options)
        elif args.format == "geth-dump":
            reader = read_geth_dump(stream)
            root = state_root(reader, **options)
            expected = reader.root
        elif args.format == "pairs-jsonl":
            root = build_root(read_pairs_jsonl(stream), **options)
        else:
            root = build_root(read_parquet_pairs(args.input, args.key_column, args.value_column), **options)
    except InputFormatError as e:
        raise UsageError("%s: %s" % (args.input, e)) from None
    except UnicodeDecodeError as e:
        raise UsageError("%s: not UTF-8 text (%s)" % (args.input, e.reason)) from None
    except RecursionError:          # json's decoder on arrays or objects nested thousands deep
        raise UsageError("%s: JSON nested too deeply" % args.input) from None
    except (TypeError, ValueError, EOFError, OSError) as e:
        if is_gzip_error(e):
            raise UsageError("%s: damaged gzip data (%s)" % (args.input, e)) from None
        if isinstance(e, OSError) or isinstance(e, MptError) and not isinstance(e, InputFormatError):
            raise                   # a failure of the build itself, not of the input: exit 1
        raise UsageError("%s: %s" % (args.input, e)) from None
    finally:
        if stream is not None:
            stream.close()
        if client is not None:
            client.close()
    print("0x" + root.hex())
    if root == EMPTY_ROOT:
        # Most likely the wrong file or an empty pipe: say so rather than let the empty trie's root pass as a result.
        print("note: %s holds no %s; that is the empty trie's root"
              % ("stdin" if args.input == "-" else args.input,
                 "accounts" if args.format in ("alloc", "geth-dump") else "key/value pairs"), file=sys.stderr)
    if expected is not None and expected != root:
        print("root differs from the dump's recorded root 0x%s" % expected.hex(), file=sys.stderr)
        return EXIT_FAILURE
    return 0
