"""Vectorised stable 64-bit hashing and hex ids.

``mix64`` is the SplitMix64 finaliser (Steele, Lea, Flood 2014, "Fast splittable pseudorandom number
generators"), a bijective avalanche mix also used as the last step of xxHash-style hashes. Keys of
strings (experiment id + salt, scenario names) come from BLAKE2b (``hashlib``), so assignment is
stable across machines, Python versions and runs.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pyarrow as pa

_C1 = np.uint64(0xBF58476D1CE4E5B9)
_C2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def str_key(*parts: object) -> np.uint64:
    """A 64-bit key from strings/ints via BLAKE2b (stable, not Python's salted ``hash``)."""
    text = "\x1f".join(str(p) for p in parts).encode()
    return np.uint64(int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "little"))


def mix64(x: np.ndarray | np.uint64) -> np.ndarray:
    """SplitMix64 finaliser over uint64 (wrapping arithmetic), elementwise."""
    z = np.asarray(x, dtype=np.uint64) + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _C1
    z = (z ^ (z >> np.uint64(27))) * _C2
    return z ^ (z >> np.uint64(31))


def hash2(a: np.ndarray, key: np.uint64) -> np.ndarray:
    """Hash of uint64 values under a key."""
    return mix64(mix64(np.asarray(a, dtype=np.uint64) ^ key) + key)


def hex_ids(values: np.ndarray, width: int = 16) -> pa.StringArray:
    """Lower-case fixed-width hex strings of uint64 values as an Arrow string array (zero-copy build).

    ``width`` is 16 (one uint64) or 32 (two hashes of the value concatenated).
    """
    v = np.asarray(values, dtype=np.uint64)
    if width == 32:
        v2 = mix64(v ^ np.uint64(0x5DEECE66D))
        both = np.empty((len(v), 2), dtype=">u8")
        both[:, 0] = v
        both[:, 1] = v2
        raw = both.tobytes()
    elif width == 16:
        raw = v.astype(">u8").tobytes()
    else:
        raise ValueError("width must be 16 or 32")
    data = raw.hex().encode("ascii")
    offsets = np.arange(len(v) + 1, dtype=np.int32) * np.int32(width)
    return pa.StringArray.from_buffers(len(v), pa.py_buffer(offsets), pa.py_buffer(data))
