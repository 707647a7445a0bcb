"""Memory embeddings as stored, and the locality-sensitive index that finds the near ones without a scan.

This Python's ``sqlite3`` cannot load extensions (it is built without ``enable_load_extension``), so
``sqlite-vec`` cannot run here; the index is ours, in plain tables, and its cost is measured in
``bench/memory_retrieval.py``.

- A vector is stored scaled to length 1 (``normalized``), as little-endian float32 (``encode``/``decode``), so
  cosine similarity is a dot product.
- ``signatures``: random-hyperplane hashing (SimHash). Each of ``BANDS`` bands has ``BITS`` hyperplanes; a
  vector's signature in a band is one bit per hyperplane (which side it lies on). Vectors at a small angle agree
  on most bits, so near vectors share long signature prefixes. The hyperplanes are ±1 entries drawn from
  BLAKE2b of (band, bit, dimension): the same on every machine and in every version, so a stored signature
  stays comparable with a query's forever.
- ``prefix_bits``: how many leading bits a query must share with a row. With ``n`` rows, ``log2(n / TARGET)``
  bits leave about ``TARGET`` rows per band, so a query reads about ``BANDS × TARGET`` candidates whatever the
  table's size (rows sharing a prefix are one range of the ``(model, profile, band, signature)`` index). Up
  to ``TARGET`` rows every row is a candidate, and the search is exact.
- ``probes``: a query also reads, per band, the buckets on the other side of its ``FLIPS`` closest
  hyperplanes (multi-probe), which is where a near vector that disagrees on one bit lies.
- ``VectorMatrix``: the vectors of one model and profile in memory, one float32 row per memory, so a query's
  candidates are scored with one numpy product instead of a read, a decode and a Python dot product each
  (about 20 µs a candidate, and a query has up to 2,000 of them).

Measured at 100,000 memories (``bench/memory_retrieval.py``): a memory queried with a third of its words
dropped is among the candidates about 4 times in 5 with ``FLIPS = 2`` (under half without), from a few
thousand candidates of 100,000.
"""

from __future__ import annotations

import functools
import hashlib
import math
import struct
from collections.abc import Iterable, Sequence
from operator import mul

import numpy as np

__all__ = [
    "BANDS",
    "BITS",
    "FLIPS",
    "TARGET",
    "VectorMatrix",
    "decode",
    "dot",
    "encode",
    "normalized",
    "prefix_bits",
    "prefix_range",
    "probes",
    "signatures",
]

BANDS = 8
BITS = 16
TARGET = 48
FLIPS = 2


def normalized(vector: Sequence[float]) -> list[float]:
    """``vector`` scaled to length 1 (a zero vector stays zero: it is near nothing)."""
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector] if norm else [0.0] * len(vector)


def encode(vector: Sequence[float]) -> bytes:
    """The BLOB of a vector: little-endian float32."""
    return struct.pack(f"<{len(vector)}f", *vector)


def decode(blob: bytes) -> tuple[float, ...]:
    """The vector of a BLOB written by ``encode``."""
    return struct.unpack(f"<{len(blob) // 4}f", blob)


def dot(a: Sequence[float], b: Sequence[float]) -> float:
    """The dot product (the cosine similarity of two normalized vectors)."""
    return float(sum(map(mul, a, b)))


@functools.cache
def _planes(dimensions: int) -> tuple[tuple[float, ...], ...]:
    """The ``BANDS × BITS`` hyperplanes (band-major) of ``dimensions`` ±1 entries each."""
    planes = []
    for band in range(BANDS):
        for bit in range(BITS):
            seed = f"ishiki-simhash/{band}/{bit}/".encode()
            blocks = (dimensions + 511) // 512
            stream = b"".join(hashlib.blake2b(seed + block.to_bytes(4, "big")).digest() for block in range(blocks))
            planes.append(tuple(1.0 if (stream[i // 8] >> (i % 8)) & 1 else -1.0 for i in range(dimensions)))
    return tuple(planes)


def signatures(vector: Sequence[float]) -> list[int]:
    """The ``BANDS`` signatures of a vector, ``BITS`` bits each (the first hyperplane is the highest bit)."""
    return [signature for signature, _ in _banded(vector)]


def probes(vector: Sequence[float], bits: int) -> list[tuple[int, int]]:
    """``(band, signature)`` pairs a query reads: per band its own signature and, for each of the ``FLIPS``
    least certain of its first ``bits`` bits (the hyperplanes it lies nearest to), the signature with that bit
    flipped (query-directed multi-probe: a near vector on the other side of a close hyperplane is found too)."""
    out = []
    for band, (signature, margins) in enumerate(_banded(vector)):
        out.append((band, signature))
        nearest = sorted(range(bits), key=margins.__getitem__)[:FLIPS]
        out += [(band, signature ^ (1 << (BITS - 1 - bit))) for bit in nearest]
    return out


def _banded(vector: Sequence[float]) -> list[tuple[int, list[float]]]:
    """Per band: the signature, and each bit's margin (the distance to its hyperplane, unscaled)."""
    planes = _planes(len(vector))
    out = []
    for band in range(BANDS):
        signature, margins = 0, []
        for plane in planes[band * BITS : (band + 1) * BITS]:
            side = sum(map(mul, vector, plane))
            signature = (signature << 1) | (side >= 0.0)
            margins.append(abs(side))
        out.append((signature, margins))
    return out


def prefix_bits(rows: int) -> int:
    """How many leading signature bits a query shares with its candidates when the index holds ``rows``."""
    if rows <= TARGET:
        return 0
    return min(BITS, math.ceil(math.log2(rows / TARGET)))


def prefix_range(signature: int, bits: int) -> tuple[int, int]:
    """The signatures sharing the first ``bits`` bits of ``signature``: ``(lowest, highest)``, inclusive."""
    free = BITS - bits
    low = (signature >> free) << free
    return low, low + (1 << free) - 1


class VectorMatrix:
    """The vectors of one (model, profile) as rows of a float32 matrix, found by memory id.

    A memory's row is overwritten when it is embedded again; a memory whose vector went (deleted, or embedded
    by another model) loses its row, which is left unused. Not thread-safe: its owner uses it from one thread
    at a time (the database's worker).
    """

    def __init__(self, dimensions: int, rows: Iterable[tuple[int, bytes]] = ()):
        self.dimensions = dimensions
        ids, blobs = [], []
        for memory_id, blob in rows:
            ids.append(memory_id)
            blobs.append(blob)
        data = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(ids), dimensions)
        self._data = np.array(data, dtype=np.float32)  # a writable copy
        self._used = len(ids)
        self._row_of = np.full(max(ids, default=0) + 1, -1, dtype=np.int64)  # memory id -> row, -1: none
        self._row_of[ids] = np.arange(len(ids))

    def put(self, memory_id: int, vector: Sequence[float]) -> None:
        """Store (or replace) the vector of ``memory_id``."""
        if memory_id >= len(self._row_of):
            grown = np.full(max(memory_id + 1, 2 * len(self._row_of)), -1, dtype=np.int64)
            grown[: len(self._row_of)] = self._row_of
            self._row_of = grown
        if self._row_of[memory_id] < 0:
            if self._used == len(self._data):
                grown_data = np.zeros((max(64, 2 * len(self._data)), self.dimensions), dtype=np.float32)
                grown_data[: self._used] = self._data[: self._used]
                self._data = grown_data
            self._row_of[memory_id] = self._used
            self._used += 1
        self._data[self._row_of[memory_id]] = vector

    def discard(self, memory_id: int) -> None:
        """Forget the vector of ``memory_id`` (if it had one)."""
        if memory_id < len(self._row_of):
            self._row_of[memory_id] = -1

    def scores(self, ids: Iterable[int], query: Sequence[float], best: int | None = None) -> list[tuple[float, int]]:
        """``(dot product with query, id)`` for each of ``ids`` that has a vector, highest first (ties: higher
        id first); only the ``best`` highest when given."""
        wanted = np.fromiter(ids, dtype=np.int64)
        wanted = wanted[(wanted >= 0) & (wanted < len(self._row_of))]
        rows = self._row_of[wanted]
        wanted, rows = wanted[rows >= 0], rows[rows >= 0]
        dots = self._data[rows] @ np.asarray(query, dtype=np.float32)
        if best is not None and best < len(dots):
            top = np.argpartition(-dots, best)[:best]
            wanted, dots = wanted[top], dots[top]
        order = np.lexsort((-wanted, -dots))
        return list(zip(dots[order].tolist(), wanted[order].tolist(), strict=True))
