"""Keccak-256 as used by Ethereum, implemented in C (keccak.c)."""
from .binding import keccak256

__all__ = ["keccak256"]
