"""SHA-256 backed by sha256.c (SHA-NI when the CPU has it, portable C otherwise)."""
from _typeshed import ReadableBuffer

BACKENDS: tuple[str, ...]

def sha256(data: ReadableBuffer) -> bytes:
    """Return the 32-byte SHA-256 digest of a bytes-like object (``str`` is refused)."""

def sha256_prefixed(prefix: int, data: ReadableBuffer) -> bytes:
    """Return SHA-256 of one prefix byte followed by data (RFC 6962: 0 for leaves, 1 for inner nodes)."""

def sha256_backend() -> str:
    """Name of the SHA-256 backend in use: "shani" (x86 SHA extensions), "avx512" or "avx2" (lanes, batches) or
    "scalar"."""

def sha256_backends() -> list[str]:
    """Names of the backends this build and CPU can run, portable first."""

def set_sha256_backend(name: str) -> str:
    """Use the named backend ("scalar", "avx2", "avx512", "shani" or "auto") process-wide; returns the previous
    name."""

def _sha256_streamed(chunks: list[bytes]) -> bytes: ...
def _sha256_many(messages: list[bytes], prefix: int | None = None) -> list[bytes]: ...
def _sha256_pairs(prefix: int, level: bytes, in_place: bool = False) -> bytes: ...
def adopt_library_copy(setter: object, getter: object) -> None: ...
def _copy_backends() -> list[str]: ...
def sha256_floor(messages: list[bytes], repeat: int, batched: bool = True) -> None: ...
