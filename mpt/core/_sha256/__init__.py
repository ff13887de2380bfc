"""SHA-256 implemented in C (sha256.c): SHA-NI or AVX-512 lanes chosen by CPUID and a short timing, AVX2 lanes,
portable fallback; MPT_SHA256_BACKEND forces one."""
from .binding import sha256, sha256_backend, sha256_backends, sha256_prefixed, set_sha256_backend

__all__ = ["sha256", "sha256_prefixed", "sha256_backend", "sha256_backends", "set_sha256_backend"]
