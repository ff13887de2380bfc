"""Ethereum state roots from account records, genesis alloc JSON and geth dumps (re-exported by mpt.eth).

An account record is a mapping with:

- ``address`` (20 bytes or hex) or ``key`` (the 32-byte keccak of the address, as geth's dump calls it);
- ``nonce`` and ``balance``: ints, ``0x`` hex or decimal strings (genesis files use both);
- ``code_hash`` / ``codeHash`` (32 bytes or hex), or ``code`` (its keccak is taken); default: no code;
- ``storage``: a mapping slot -> value (slots and values as ints, bytes or hex; zero values are absent), or
  ``storage_root`` / ``root``: the storage trie's root when it is already known (a geth dump gives it).

:func:`state_root` builds each storage trie (several at once on a thread pool; the builds release the GIL) and
then the account trie with :func:`mpt.build_root`. :func:`read_genesis_alloc` and :func:`read_geth_dump` turn
the two common JSON formats into such records, raising :class:`mpt.errors.InputFormatError` naming the line (or
the account) of a malformed record.
"""
from __future__ import annotations

import io
import json
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, Iterable, Iterator, Mapping, Optional, Tuple

from mpt.core import rlp
from mpt.core._keccak import keccak256
from mpt.ethereum.parallel import build_root
from mpt.ethereum.secure import EMPTY_CODE_HASH
from mpt.ethereum.trie import EMPTY_ROOT
from mpt.errors import InputFormatError
from mpt.ethereum.parallel import check_workers
from mpt.core.jsonrpc import parse_data, parse_json_line, parse_number

__all__ = [
    "account_pairs",
    "read_genesis_alloc",
    "read_geth_dump",
    "state_root",
    "storage_root",
]

_UINT64 = (1 << 64) - 1
_UINT256 = (1 << 256) - 1
# Accounts whose storage tries are built together on the pool: enough to keep the threads busy, few enough
# that a streamed input is never held whole.
_BATCH = 1024
# A storage trie with fewer slots is built on the reading thread: a pool hand-off costs more than the build.
_POOL_MIN_SLOTS = 64


def _where(where: str) -> str:
    return (where + ": ") if where else ""


def _int(value: Any, field: str, where: str, limit: int) -> int:
    """A number field: an int, big-endian bytes, or a string read by mpt.jsonrpc.parse_number (0x hex or a
    canonical decimal); at most ``limit``."""
    if isinstance(value, (bytes, bytearray)):
        value = int.from_bytes(value, "big")
    elif value in ("0x", "0X"):
        return 0                        # geth's dumps write an empty quantity for zero
    return parse_number(value, _where(where) + field, limit.bit_length(), error=InputFormatError)


def _hex(value: Any, field: str, where: str, size: Optional[int] = None) -> bytes:
    """Bytes, or hex with or without 0x (mpt.jsonrpc.parse_data); ``size`` demands an exact length."""
    return parse_data(value, _where(where) + field, size, prefix=None, error=InputFormatError)


def _slot(value: Any, where: str) -> bytes:
    # A storage slot as its 32-byte big-endian word (geth's common.Hash: shorter hex is left-padded).
    if isinstance(value, int) and not isinstance(value, bool):
        return _int(value, "storage slot", where, _UINT256).to_bytes(32, "big")
    raw = _hex(value, "storage slot", where)
    if len(raw) > 32:
        raise InputFormatError("%sstorage slot %s is longer than 32 bytes" % (_where(where), raw.hex()))
    return raw.rjust(32, b"\0")


def storage_pairs(storage: Mapping[Any, Any], where: str = "") -> Iterator[Tuple[bytes, bytes]]:
    """The storage trie's (keccak(slot), rlp(value)) pairs; zero values are left out (an empty slot)."""
    if not isinstance(storage, Mapping):
        raise InputFormatError("%sstorage: expected an object of slot -> value, got %s"
                               % (_where(where), type(storage).__name__))
    for slot, value in storage.items():
        n = _int(value if not isinstance(value, str) or value[:2] in ("0x", "0X") else "0x" + value,
                 "storage value", where, _UINT256)
        if n:
            yield keccak256(_slot(slot, where)), rlp.encode(n)


def storage_root(storage: Mapping[Any, Any], *, workers: int = 1, where: str = "") -> bytes:
    """Root of the storage trie holding ``storage`` (slot -> value)."""
    return build_root(list(storage_pairs(storage, where)), workers=workers)


def _account_key(record: Mapping[str, Any], where: str) -> bytes:
    if record.get("address") is not None:
        return keccak256(_hex(record["address"], "address", where, 20))
    for field in ("key", "address_hash", "addressHash"):
        if record.get(field) is not None:
            return _hex(record[field], field, where, 32)
    raise InputFormatError("%saccount has neither an address nor a key (hashed address)" % _where(where))


def _code_hash(record: Mapping[str, Any], where: str) -> bytes:
    for field in ("code_hash", "codeHash"):
        if record.get(field) is not None:
            return _hex(record[field], field, where, 32)
    if record.get("code") is not None:
        return keccak256(_hex(record["code"], "code", where))
    return EMPTY_CODE_HASH


def _known_storage_root(record: Mapping[str, Any], where: str) -> Optional[bytes]:
    for field in ("storage_root", "storageRoot", "root"):
        if record.get(field) is not None:
            return _hex(record[field], field, where, 32)
    return None


def _where_of(record: Mapping[str, Any], index: int) -> str:
    return record.get("_where") or "account %d" % index


def account_pairs(accounts: Iterable[Mapping[str, Any]], *, workers: Optional[int] = None
                  ) -> Iterator[Tuple[bytes, bytes]]:
    """(hashed address, account RLP) of each record, storage roots built on ``workers`` threads."""
    workers = check_workers(workers)
    pool = ThreadPoolExecutor(max_workers=workers) if workers > 1 else None
    try:
        batch = []
        for index, record in enumerate(accounts):
            if not isinstance(record, Mapping):
                raise InputFormatError("account %d: expected an object, got %s" % (index, type(record).__name__))
            batch.append((index, record))
            if len(batch) >= _BATCH:
                yield from _encode_batch(batch, pool)
                batch = []
        yield from _encode_batch(batch, pool)
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def _encode_batch(batch, pool):
    roots = []
    for index, record in batch:
        where = _where_of(record, index)
        known = _known_storage_root(record, where)
        storage = record.get("storage")
        if storage and known is None:
            pairs = list(storage_pairs(storage, where))     # parsed here: errors name the record
            if pool is not None and len(pairs) >= _POOL_MIN_SLOTS:
                roots.append(pool.submit(build_root, pairs, workers=1))
            else:
                roots.append(build_root(pairs, workers=1))
        else:
            roots.append(known if known is not None else EMPTY_ROOT)
    for (index, record), root in zip(batch, roots):
        where = _where_of(record, index)
        if not isinstance(root, bytes):
            root = root.result()
        nonce = _int(record.get("nonce", 0), "nonce", where, _UINT64)
        balance = _int(record.get("balance", 0), "balance", where, _UINT256)
        yield _account_key(record, where), rlp.encode([nonce, balance, root, _code_hash(record, where)])


def state_root(accounts: Iterable[Mapping[str, Any]], *, workers: Optional[int] = None, executor=None,
               spill_dir: Optional[str] = None, memory_limit: Optional[int] = None, progress=False) -> bytes:
    """The state root over account records (see the module docstring); the rest as in :func:`mpt.build_root`."""
    workers = check_workers(workers)        # here, not when the generator below first runs
    return build_root(account_pairs(accounts, workers=workers), workers=workers, executor=executor,
                      spill_dir=spill_dir, memory_limit=memory_limit, progress=progress)


# ---------------------------------------------------------------------------------------------- readers

def _open_text(source):
    if isinstance(source, (str, os.PathLike)):
        return open(source, "r", encoding="utf-8"), True
    if isinstance(source, (bytes, bytearray)):
        return io.StringIO(bytes(source).decode("utf-8")), True
    return source, False


def read_genesis_alloc(source) -> Iterator[Dict[str, Any]]:
    """Account records of a genesis file (geth's genesis.json or execution-specs' mainnet.json, with an
    ``alloc`` object) or of a bare alloc object: address -> {balance, nonce, code, storage}. ``source``: a path,
    a text file, JSON text as bytes, or the already parsed dict."""
    if isinstance(source, Mapping):
        doc = source
    else:
        f, close = _open_text(source)
        try:
            doc = json.load(f)
        except json.JSONDecodeError as e:
            raise InputFormatError("genesis JSON, line %d column %d: %s" % (e.lineno, e.colno, e.msg),
                                   line=e.lineno) from None
        finally:
            if close:
                f.close()
    if not isinstance(doc, Mapping):
        raise InputFormatError("genesis JSON: expected an object, got %s" % type(doc).__name__)
    alloc = doc.get("alloc", doc)
    if not isinstance(alloc, Mapping):
        raise InputFormatError("genesis JSON: alloc must be an object of address -> account")
    for address, account in alloc.items():
        where = "alloc[%s]" % address
        if not isinstance(account, Mapping):
            raise InputFormatError("%s: expected an object, got %s" % (where, type(account).__name__))
        record = dict(account)
        record["address"] = address
        record["_where"] = where
        yield record


class read_geth_dump:
    """Account records of ``geth snapshot dump`` / ``geth dump --iterative`` output: one JSON object per line, the
    first ``{"root": ...}`` (kept as :attr:`root`), then one account per line with balance (decimal), nonce,
    root (its storage root), codeHash, and address or key. geth's single-object ``dump`` (``{"root": ...,
    "accounts": {...}}``) is read too. Iterate it once; malformed lines raise InputFormatError naming the line."""

    def __init__(self, source) -> None:
        self.source = source
        self.root: Optional[bytes] = None
        self.lines = 0

    def __iter__(self) -> Iterator[Dict[str, Any]]:
        f, close = _open_text(self.source)
        try:
            for number, line in enumerate(f, 1):
                self.lines = number
                text = line.strip()
                if not text:
                    continue
                if number == 1 and text == "{":     # never a JSON line: the start of an indented whole dump
                    yield from self._whole(f, line)
                    return
                obj = parse_json_line(text, number)
                if not isinstance(obj, dict):
                    raise InputFormatError("line %d: expected a JSON object, got %s" % (number, type(obj).__name__),
                                           line=number)
                if "accounts" in obj:
                    yield from self._accounts(obj)
                    continue
                if set(obj) == {"root"}:
                    self.root = _hex(obj["root"], "root", "line %d" % number, 32)
                    continue
                obj["_where"] = "line %d" % number
                yield obj
        finally:
            if close:
                f.close()

    def _whole(self, f, first):
        # geth dump's indented single object: read the rest and parse it at once.
        try:
            obj = json.loads(first + f.read())
        except json.JSONDecodeError as e:
            raise InputFormatError("dump JSON, line %d column %d: %s" % (e.lineno, e.colno, e.msg),
                                   line=e.lineno) from None
        yield from self._accounts(obj)

    def _accounts(self, obj):
        if obj.get("root") is not None:
            self.root = _hex(obj["root"], "root", "dump", 32)
        accounts = obj.get("accounts")
        if not isinstance(accounts, Mapping):
            raise InputFormatError("dump: accounts must be an object")
        for name, account in accounts.items():
            if not isinstance(account, dict):
                raise InputFormatError("dump: account %s is not an object" % name)
            account = dict(account)
            if account.get("address") is None and account.get("key") is None and not name.startswith("pre("):
                account["address"] = name
            account["_where"] = "account %s" % name
            yield account
