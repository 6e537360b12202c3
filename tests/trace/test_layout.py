"""Byte spans and row-major checks against what torch itself addresses."""

from __future__ import annotations

import itertools

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tcopy_cli.trace.layout import byte_span, is_row_major

DTYPES = [torch.float32, torch.float64, torch.int16, torch.uint8]


@st.composite
def strided_views(draw: st.DrawFn) -> torch.Tensor:
    dims = draw(st.integers(0, 3))
    shape = [draw(st.integers(0, 4)) for _ in range(dims)]
    stride = [draw(st.integers(0, 6)) for _ in range(dims)]
    offset = draw(st.integers(0, 5))
    dtype = draw(st.sampled_from(DTYPES))
    hi = sum(max(0, (s - 1) * t) for s, t in zip(shape, stride))
    base = torch.zeros(offset + hi + 1, dtype=dtype)
    return base.as_strided(shape, stride, offset)


@settings(max_examples=200, deadline=None)
@given(strided_views())
def test_byte_span_is_the_bytes_torch_addresses(t: torch.Tensor) -> None:
    start, end = byte_span(t.shape, t.stride(), t.storage_offset(), t.element_size())
    base = t.untyped_storage().data_ptr()
    if t.numel() == 0:
        assert start == end == t.storage_offset() * t.element_size()
        return
    # Every element's address, as torch computes it: index each one and read data_ptr.
    addresses = [t[idx].data_ptr() - base for idx in itertools.product(*(range(s) for s in t.shape))]
    assert start == min(addresses)
    assert end == max(addresses) + t.element_size()


@settings(max_examples=200, deadline=None)
@given(strided_views())
def test_row_major_matches_contiguity(t: torch.Tensor) -> None:
    # torch's is_contiguous ignores strides of size-1 dimensions as this does; it also
    # calls every empty tensor contiguous, which byte_span handles on its own.
    if t.numel() > 0:
        assert is_row_major(t.shape, t.stride()) == t.is_contiguous()
