"""Process-wide settings every tree family shares: hashing threads, the OpenMP fork guard, the hash backends."""
from typing import List

__all__ = ["get_hash_threads", "set_hash_threads", "keccak_backends", "keccak_backend", "set_keccak_backend",
           "sha256_backends", "sha256_backend", "set_sha256_backend"]

def get_hash_threads() -> int:
    """Threads the batched hashers spread their work over (1: the calling thread only)."""

def set_hash_threads(n: int) -> int:
    """Set the number of hashing threads of every tree family (1 = the calling thread only). Returns the old value."""

def keccak_backends() -> List[str]:
    """Names of the Keccak backends this build and CPU can run, narrowest first ("scalar", "avx2", ...)."""

def keccak_backend() -> str:
    """Name of the Keccak backend the batched hasher uses for node encodings."""

def set_keccak_backend(name: str) -> str:
    """Use the named backend ("scalar", "avx2", "avx512", "avx2x8", or "auto"). Returns the previous name."""

def sha256_backends() -> List[str]:
    """Names of the SHA-256 backends this build and CPU can run, portable first."""

def sha256_backend() -> str:
    """Name of the SHA-256 backend in use ("scalar", "avx2" or "shani")."""

def set_sha256_backend(name: str) -> str:
    """Use the named SHA-256 backend ("scalar", "avx2", "shani", or "auto"), process-wide. Returns the previous name."""
