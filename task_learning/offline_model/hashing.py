"""Deterministic pseudo-variation: a stable hash of strings mapped to [0, 1).

The offline model must give the same answer to the same request in every process and run, so it
never uses random state or Python's salted `hash()`; variation between objects comes from here.
"""
from __future__ import annotations

import hashlib


def unit_hash(*parts: str) -> float:
    """A number in [0, 1) that depends only on `parts`."""
    blob = "\x1f".join(parts).encode("utf-8")
    digest = hashlib.blake2b(blob, digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2.0**64
