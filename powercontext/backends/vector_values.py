"""The values a database returns for vectors it stored, computed without reading them
back.

SQLite keeps the float32 bytes, so it returns the float32 value of each component.
OceanBase returns a VECTOR column as text with six significant digits: the value it
returns is the float32 component rounded to six significant decimal digits (checked
against the server on 7.68M components of seeded vectors and on MiniLM vectors; the
test suite re-checks it on every run). Writes read the vectors they wrote back for c̄
(centroid.py) so that removing a vector later subtracts exactly what adding it added;
knowing the returned values without the read-back spares a 100k-entry load reading
~330 MB of vector text back. Formatting every component with ``"%g"`` in Python costs
~0.3 ms a vector, so the rounding is done with numpy, and only components whose
rounding is too close to call in binary (a product within 1e-6 of a half) go through
``"%g"``: the result is exactly ``float("%g" % component)``.
"""

from __future__ import annotations

import struct
from typing import Sequence

import numpy as np

SIGNIFICANT = 6
_HALF_MARGIN = 1e-6  # |product − ½| below this: decided by "%g" (products < 1e6 err < 1e-9)
_SMALLEST = 1e-15  # below it 10**k is no longer an exact double: decided by "%g"
_POWERS = 10.0 ** np.arange(23)  # exact doubles
_LOW, _HIGH = 10.0 ** (SIGNIFICANT - 1), 10.0 ** SIGNIFICANT


def float32_bytes(values: Sequence[float]) -> bytes:
    """Little-endian float32 bytes of one vector (what both databases store): a numpy
    row converted at once (a commit's vectors are rows of one array), anything else
    packed by ``struct`` — the same bytes either way (both round to nearest)."""
    if isinstance(values, np.ndarray):
        return values.astype("<f4").tobytes()
    return struct.pack(f"<{len(values)}f", *values)


def as_float32(vectors: Sequence[Sequence[float]]) -> np.ndarray:
    """(n, d) float64 array of the float32 values of ``vectors`` (what SQLite returns)."""
    return np.asarray(vectors, dtype=np.float32).astype(np.float64)


def six_digits(vectors: Sequence[Sequence[float]]) -> np.ndarray:
    """(n, d) float64 array: each float32 component rounded to six significant decimal
    digits, exactly as ``float("%g" % component)`` (what OceanBase returns)."""
    x = as_float32(vectors)
    magnitude = np.abs(x)
    regular = magnitude >= _SMALLEST
    with np.errstate(divide="ignore"):
        decade = np.floor(np.log10(np.where(regular, magnitude, 1.0)))
    # k digits after the point keep six significant ones; 10**k is an exact double for k ≤ 22
    k = np.clip((SIGNIFICANT - 1) - decade, 0, len(_POWERS) - 1).astype(np.intp)
    scale = _POWERS[k]
    product = magnitude * scale
    rounded = np.rint(product)
    # too close to a half to call in binary, or a decade misjudged by log10 (not six
    # digits): "%g" decides
    decided = (regular & (np.abs(np.abs(product - rounded) - 0.5) >= _HALF_MARGIN)
               & (rounded >= _LOW) & (rounded < _HIGH))
    out = np.where(decided, np.copysign(rounded / scale, x), 0.0)
    rest = ~decided & (x != 0)
    if rest.any():
        out[rest] = [float("%g" % value) for value in x[rest].tolist()]
    return out
