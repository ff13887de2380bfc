"""``python -m mpt verify-query RESPONSE.json --app-hash HEX``: verify a saved ``abci_query`` answer.

Prints the proven value as hex (``--text``: as text when it is printable UTF-8), or ``absent`` for a proven
absence. Exit status 0 when the proof holds, 1 when it
does not (one ``error: ...`` line saying why, from mpt.cli.run_command), 2 for usage errors (no such file, a
file that is not JSON, bad hex).
"""
import json
import sys

from mpt.cli import UsageError
from mpt.core.jsonrpc import parse_data
from mpt.ics23.abci import verify_abci_query


def add_parser(subparsers):
    """Register the verify-query command on an argparse subparsers object; return its parser."""
    p = subparsers.add_parser(
        "verify-query",
        help="verify a Cosmos abci_query answer (prove=true) against an app hash",
        description="Check the proof ops of a CometBFT abci_query answer (the JSON the node returned for "
                    "/abci_query?path=\"/store/<store>/key\"&data=<key>&prove=true) against an app hash you "
                    "trust, and print the proven value as hex (or as text with --text), or 'absent'. The state "
                    "of a query at height H is committed by the app hash in header H+1.",
        epilog="Exit status: 0 if the proof holds, 1 if it does not, 2 for bad arguments or an unreadable file.",
    )
    p.add_argument("response", metavar="RESPONSE.json",
                   help="the node's answer: the JSON-RPC envelope, its result, or result.response ('-' reads "
                        "standard input)")
    p.add_argument("--app-hash", required=True, metavar="HEX",
                   help="the trusted app hash, 64 hex digits, 0x optional (from header H+1 for a query at "
                        "height H)")
    p.add_argument("--key", metavar="HEX", help="the queried key as hex (0x optional): refuse an answer about "
                                                "another key")
    p.add_argument("--store", metavar="NAME", help="the store name (e.g. bank): refuse a proof for another store")
    p.add_argument("--text", action="store_true",
                   help="print the value as text when it is printable UTF-8 (else as hex, as without --text)")
    return p


def _hex_arg(text, name, size=None):
    return parse_data(text, name, size, prefix=None, error=UsageError)


def printable_text(value):
    """value decoded as UTF-8 when it is text a terminal shows as it is (no control characters), else None."""
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text if text and text.isprintable() else None


def _read(path):
    try:
        if path == "-":
            return sys.stdin.buffer.read()
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror or e}") from None


def run(args):
    """Print the proven value (hex, or text with --text) or ``absent``; a proof that does not hold raises
    ProofError (exit 1 through mpt.cli.run_command), bad arguments UsageError (exit 2)."""
    app_hash = _hex_arg(args.app_hash, "--app-hash", 32)
    key = _hex_arg(args.key, "--key") if args.key is not None else None
    text = _read(args.response)
    try:
        json.loads(text)
    except (ValueError, RecursionError) as e:
        # Not an answer at all (a wrong file): a usage error, unlike an answer whose proof fails (exit 1).
        raise UsageError(f"{args.response} is not JSON: {e}") from None
    value = verify_abci_query(text, app_hash, key=key, store=args.store)
    if value is None:
        print("absent")
    elif args.text and printable_text(value) is not None:
        print(printable_text(value))
    else:
        print(value.hex())
    return 0
