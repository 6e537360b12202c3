"""Where a strided tensor's elements lie: shared by observing (addresses) and records (offsets).

Plain arithmetic on sizes and strides, no torch, so records and renderers can use it.
"""

from __future__ import annotations

from collections.abc import Sequence


def byte_span(shape: Sequence[int], stride: Sequence[int], offset: int, element_size: int) -> tuple[int, int]:
    """[start, end) bytes that the elements cover, counted from the storage start.

    ``offset`` is the storage offset in elements. An empty tensor covers no bytes
    (start == end, at its offset). Negative strides count too, although torch makes none.
    """
    if any(d == 0 for d in shape):
        return (offset * element_size,) * 2
    lo = sum(min(0, (s - 1) * st) for s, st in zip(shape, stride))
    hi = sum(max(0, (s - 1) * st) for s, st in zip(shape, stride))
    return (offset + lo) * element_size, (offset + hi + 1) * element_size


def is_row_major(shape: Sequence[int], stride: Sequence[int]) -> bool:
    """True when the elements are laid out row-major (dimensions of size 1 don't count).

    A transpose, a column or a step slice is not, even when it covers its whole span.
    """
    expected = 1
    for size, st in reversed(list(zip(shape, stride))):
        if size != 1 and st != expected:
            return False
        expected *= size
    return True
