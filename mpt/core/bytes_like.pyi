"""The one bytes-like policy for the pure-Python entry points."""
from typing import Optional

from _typeshed import ReadableBuffer

def bytes_arg(value: ReadableBuffer, what: str = "value") -> bytes: ...
def bytes_arg_or_none(value: Optional[ReadableBuffer], what: str = "value") -> Optional[bytes]: ...
