"""The running vector sum behind c̄, the mean vector of a Memory's active entries.

Admission's centred cosine is ``cos(q, e) − q·c̄``, where c̄ is the mean of the searched
Memories' active entry vectors. Each Memory keeps ``(count, sum)`` of its active
vectors in one row, changed in the same transaction as its head projection, so c̄ is
exact for the head a search confirms and costs one row read per searched Memory.

The sum is kept in fixed point (int64 per component, ``SCALE`` = 2**32 units per 1.0)
of each vector as the database returns it (OceanBase returns vectors as 6-digit text,
SQLite the float32 bytes): a vector leaving the head is read back inside the writing
transaction, one entering it is taken as the database will return it
(vector_values.py). Integer
addition is exact and order-free: removing a vector subtracts exactly what adding it
added, so a Memory after any sequence of writes has the very sum a rebuild from
scratch computes (a float running sum would drift with every revise and forget). With
unit vectors a component sum overflows only past 2**31 vectors.
"""

from __future__ import annotations

import operator
import struct
from typing import Iterable, Sequence

import numpy as np

SCALE = float(2**32)


def quantize(values: Sequence[float]) -> list[int]:
    """The fixed-point form of one vector as the database returns it (float32). One
    pack for the whole vector and C-level maps: per component in Python, quantizing
    took ~2 ms a vector, 23 s of a 10k-entry OceanBase load on a busy machine."""
    n = len(values)
    as_float32 = struct.unpack(f"<{n}f", struct.pack(f"<{n}f", *values))
    return list(map(round, map(SCALE.__mul__, as_float32)))


def pack(sums: Sequence[int]) -> bytes:
    return struct.pack(f"<{len(sums)}q", *sums)


def unpack(blob: bytes | None, dimension: int) -> list[int]:
    if not blob:
        return [0] * dimension
    blob = bytes(blob)
    return list(struct.unpack(f"<{len(blob) // 8}q", blob))


class VectorSumDelta:
    """What one commit adds to and removes from a Memory's vector sum."""

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self.count = 0
        self.sums = [0] * dimension

    def add(self, values: Sequence[float]) -> None:
        self.count += 1
        self.sums = list(map(operator.add, self.sums, quantize(values)))

    def remove(self, values: Sequence[float]) -> None:
        self.count -= 1
        self.sums = list(map(operator.sub, self.sums, quantize(values)))

    def add_many(self, returned: np.ndarray) -> None:
        """Add the rows of ``returned``, (n, d) values as the database returns them
        (vector_values.py), in one pass: the same integers as ``add`` row by row
        (numpy's rint rounds half to even, like ``round``)."""
        if len(returned):
            self.count += len(returned)
            fixed = np.rint(np.asarray(returned, dtype=np.float32).astype(np.float64) * SCALE).astype(np.int64)
            self.sums = list(map(operator.add, self.sums, fixed.sum(axis=0).tolist()))

    def __bool__(self) -> bool:
        return self.count != 0 or any(self.sums)

    def applied_to(self, count: int, sums: Sequence[int]) -> tuple[int, list[int]]:
        return count + self.count, [a + b for a, b in zip(sums, self.sums)]


def mean(rows: Iterable[tuple[int, Sequence[int]]], dimension: int) -> tuple[float, ...] | None:
    """c̄ over several Memories' ``(count, sums)``; None when they hold no vector."""
    total, sums = 0, [0] * dimension
    for count, part in rows:
        total += int(count)
        sums = [a + b for a, b in zip(sums, part)]
    if total <= 0:
        return None
    scale = SCALE * total
    return tuple(s / scale for s in sums)


def dot(a: Sequence[float], b: Sequence[float]) -> float:
    # The same products summed in the same order as a generator would, in C.
    return sum(map(operator.mul, a, b))
