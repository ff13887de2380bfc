"""One strict reading of the number and byte fields of JSON-RPC answers and JSON inputs.

Ethereum's JSON-RPC writes quantities as ``0x``-prefixed hex and data as ``0x``-prefixed hex bytes; CometBFT's
writes int64s as decimal strings, hashes as bare hex and byte strings as padded base64. Python's ``int()``,
``bytes.fromhex()`` and ``base64.b64decode()`` also take underscores (``"0x1_0"``), spaces (``"0x01 02"``),
signs, non-ASCII digits and base64 with stray trailing bits, so one value could be spelled several ways and a
typo could pass as data. Every module that reads such fields (``mpt.eth``, ``mpt.eip1186``, ``mpt.ethstate``,
``python -m mpt root``, ``mpt.merkle``'s RPC JSON) reads them here, with the same rules and the same messages:

- :func:`parse_quantity` -- ``0x`` hex digits, at least one (leading zeros are tolerated: providers and genesis
  files print them, and the number is the same);
- :func:`parse_decimal` -- ASCII decimal digits in canonical form (no leading zeros, no ``+``, ``-`` only when
  ``signed``);
- :func:`parse_number` -- a quantity when ``0x``-prefixed, else a decimal (genesis files use both);
- :func:`parse_data` -- hex bytes, ``0x`` required, forbidden or optional, an even number of digits unless
  asked to pad, optionally of one exact length;
- :func:`parse_base64` -- padded standard base64 in canonical form (what ``base64.b64encode`` writes).

Each raises :class:`mpt.errors.FieldFormatError` (a ``ValueError``) whose message starts with the field's name,
or the exception ``error(message)`` returns when the caller passes ``error`` (its own domain exception, e.g.
``ProofError``). Numbers are bounded before they are converted, so a 5000-digit value is "out of range", never a
slow ``int()`` or Python's 4300-digit conversion limit.
"""
from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Callable, Optional, Union

from mpt.errors import FieldFormatError, InputFormatError

__all__ = ["parse_quantity", "parse_decimal", "parse_number", "parse_data", "parse_base64", "FieldFormatError"]

ErrorFactory = Callable[[str], Exception]

_HEX_DIGITS = re.compile(r"[0-9a-fA-F]+")
_DECIMAL = re.compile(r"0|[1-9][0-9]*")
_BASE64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")
_SHOWN = 80     # characters of a bad value quoted in a message


def _fail(error: Optional[ErrorFactory], message: str) -> Exception:
    return FieldFormatError(message) if error is None else error(message)


def _show(value) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "..."


def _has_0x(text: str) -> bool:
    return text[:2] in ("0x", "0X")


def _out_of_range(error: Optional[ErrorFactory], field: str, value, bits: int) -> Exception:
    # A huge int is described, not printed: "%d" of one over 4300 digits raises ValueError itself.
    shown = ("a %d-bit number" % value.bit_length() if isinstance(value, int) and value.bit_length() > 512
             else _show(value) if isinstance(value, str) else "%d" % value)
    return _fail(error, "%s: %s is out of range (above %d bits)" % (field, shown, bits))


def _bounded(n: int, field: str, bits: int, error: Optional[ErrorFactory]) -> int:
    if n < 0:
        raise _fail(error, "%s: %d is negative" % (field, n) if n.bit_length() <= 512 else "%s: negative" % field)
    if n.bit_length() > bits:
        raise _out_of_range(error, field, n, bits)
    return n


def _decoded_int(value, field: str, what: str, error: Optional[ErrorFactory]) -> Optional[int]:
    """value when it is an int already (not a bool), None when it is a str, else the error."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise _fail(error, "%s: expected %s, got %s" % (field, what, type(value).__name__))
    return value if isinstance(value, int) else None


def parse_quantity(value: Union[str, int], field: str = "value", bits: int = 256, *, decoded: bool = True,
                   error: Optional[ErrorFactory] = None) -> int:
    """A JSON-RPC quantity (``"0x0"`` -> 0, ``"0x1b"`` -> 27), at most ``bits`` bits; with ``decoded`` an int is
    taken as it is (web3.py returns them), then bounded the same way."""
    n = _decoded_int(value, field, "a hex quantity", error) if decoded else None
    if n is None:
        if not isinstance(value, str) or not _has_0x(value) or not _HEX_DIGITS.fullmatch(value, 2):
            raise _fail(error, "%s: %s is not a 0x-prefixed hex quantity" % (field, _show(value)))
        if 4 * len(value[2:].lstrip("0")) > bits + 3:    # bounded before int(): 5000 digits are no number
            raise _out_of_range(error, field, value, bits)
        n = int(value, 16)
    return _bounded(n, field, bits, error)


def parse_decimal(value: Union[str, int], field: str = "value", bits: int = 63, *, signed: bool = False,
                  decoded: bool = True, error: Optional[ErrorFactory] = None) -> int:
    """A decimal string in canonical form (``"0"``, ``"27"``; not ``"027"``, ``"+27"``, ``" 27"``, ``"2_7"``),
    whose magnitude has at most ``bits`` bits; ``signed`` also takes ``"-27"`` (never ``"-0"``). With
    ``decoded`` a JSON number (an int) is taken too."""
    n = _decoded_int(value, field, "a decimal string", error) if decoded else None
    if n is None:
        if not isinstance(value, str):
            raise _fail(error, "%s: expected a decimal string, got %s" % (field, type(value).__name__))
        digits = value[1:] if signed and value[:1] == "-" and value != "-0" else value
        if not _DECIMAL.fullmatch(digits):
            raise _fail(error, "%s: %s is not a canonical decimal number" % (field, _show(value)))
        if len(digits) > (bits * 3) // 10 + 1:         # 2**bits has at most this many digits
            raise _out_of_range(error, field, value, bits)
        n = int(value)
    if n < 0 and signed:
        if (-n).bit_length() > bits:
            raise _out_of_range(error, field, value, bits)
        return n
    return _bounded(n, field, bits, error)


def parse_number(value: Union[str, int], field: str = "value", bits: int = 256, *, decoded: bool = True,
                 error: Optional[ErrorFactory] = None) -> int:
    """A quantity when ``0x``-prefixed, else a decimal (geth's genesis numbers, math.HexOrDecimal256)."""
    if isinstance(value, str):
        if _has_0x(value):
            return parse_quantity(value, field, bits, decoded=decoded, error=error)
        if not _DECIMAL.fullmatch(value):
            raise _fail(error, "%s: %s is neither a 0x-prefixed hex quantity nor a canonical decimal number"
                        % (field, _show(value)))
    return parse_decimal(value, field, bits, decoded=decoded, error=error)


def parse_data(value, field: str = "data", size: Optional[int] = None, *, prefix: Optional[bool] = True,
               pad_odd: bool = False, decoded: bool = True, error: Optional[ErrorFactory] = None) -> bytes:
    """Hex bytes (``"0x0102"`` -> b"\\x01\\x02"). ``prefix``: True demands ``0x`` (JSON-RPC data), False refuses
    it (CometBFT's hashes), None takes both. An odd number of digits is refused unless ``pad_odd`` (a leading
    0 is then implied). ``size`` demands an exact length. With ``decoded`` bytes-like values are taken too."""
    if decoded and isinstance(value, (bytes, bytearray, memoryview)):
        out = bytes(value)
    else:
        if not isinstance(value, str):
            raise _fail(error, "%s: expected hex data, got %s" % (field, type(value).__name__))
        start = 2 if _has_0x(value) and prefix is not False else 0
        kind = "0x-prefixed hex data" if prefix else "hex data"
        if (prefix and not start) or (value[start:] and not _HEX_DIGITS.fullmatch(value, start)):
            raise _fail(error, "%s: %s is not %s" % (field, _show(value), kind))
        digits = value[start:]
        if len(digits) % 2:
            if not pad_odd:
                raise _fail(error, "%s: %s has an odd number of hex digits" % (field, _show(value)))
            digits = "0" + digits
        out = bytes.fromhex(digits)
    if size is not None and len(out) != size:
        raise _fail(error, "%s: expected %d bytes, got %d" % (field, size, len(out)))
    return out


def parse_base64(value, field: str = "data", size: Optional[int] = None, *,
                 error: Optional[ErrorFactory] = None) -> bytes:
    """Padded standard base64 in canonical form (the one ``base64.b64encode`` writes: no whitespace, no
    URL-safe letters, no stray bits in the last character); ``size`` demands an exact length."""
    if not isinstance(value, str):
        raise _fail(error, "%s: expected a base64 string, got %s" % (field, type(value).__name__))
    # Fast path, same acceptance: a string that is the canonical encoding of what the lenient decoder reads from
    # it passes every check below (the pattern and the strict decode are 4x slower on a kilobyte proof).
    try:
        out = binascii.a2b_base64(value)
        if binascii.b2a_base64(out, newline=False) == value.encode("ascii"):
            if size is not None and len(out) != size:
                raise _fail(error, "%s: expected %d bytes, got %d" % (field, size, len(out)))
            return out
    except (binascii.Error, ValueError):    # bad padding, non-ASCII: the checks below say which
        pass
    if not _BASE64.fullmatch(value):
        raise _fail(error, "%s: %s is not padded base64" % (field, _show(value)))
    try:
        out = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as e:      # unreachable after the pattern; kept as a guard
        raise _fail(error, "%s: %s is not padded base64 (%s)" % (field, _show(value), e)) from None
    if base64.b64encode(out).decode("ascii") != value:
        raise _fail(error, "%s: %s is not canonical base64 (stray bits in its last character)" % (field, _show(value)))
    if size is not None and len(out) != size:
        raise _fail(error, "%s: expected %d bytes, got %d" % (field, size, len(out)))
    return out


def parse_json_line(text: str, number: int):
    """The JSON value of line ``number`` of a JSON-lines input (``text``: the line, stripped), or
    :class:`mpt.errors.InputFormatError` naming the line: the one reading of ``python -m mpt root`` pairs files
    and geth dumps."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise InputFormatError("line %d: not JSON (%s at column %d)" % (number, e.msg, e.colno),
                               line=number) from None
