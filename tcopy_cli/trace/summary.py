"""A tensor's values as a record shows them: all of them, or a preview and statistics.

Large tensors are summarised with reductions on their device, over a bounded sample.
"""

from __future__ import annotations

import ctypes
import math
from typing import Any

import torch

from tcopy_cli.trace.values import format_nested, format_number, json_values

PREVIEW_ITEMS = 6


def _head(d: torch.Tensor, k: int) -> list[Any]:
    """The first k values in row-major order without copying the tensor."""
    if d.is_contiguous():
        return d.view(-1)[:k].tolist()  # type: ignore[no-any-return]
    row = d
    while row.dim() > 1:
        row = row[0]
    return row[:k].tolist()  # type: ignore[no-any-return]


STATS_SAMPLE = 1_000_000


def _sample(d: torch.Tensor) -> tuple[torch.Tensor, bool]:
    """A bounded view of a large tensor for statistics: evenly spaced contiguous blocks.

    Blocks (not single strided elements) keep the memory read bounded too: reading
    every k-th float would still touch every cache line of the tensor.
    """
    n = d.numel()
    if n <= STATS_SAMPLE:
        return d, False
    if d.is_contiguous():
        blocks, size = 64, STATS_SAMPLE // 64
        spacing = n // blocks
        return d.view(-1).as_strided((blocks, size), (spacing, 1)), True
    rows = max(1, STATS_SAMPLE * d.shape[0] // n) if d.dim() else 1
    return d[:: -(-d.shape[0] // rows)], True


def summarize(d: torch.Tensor) -> str:
    """Preview of a tensor too large to list: first values and statistics on its device.

    Statistics of tensors over a million elements come from an evenly strided sample
    of about a million of them (said in the preview), so observing a large tensor costs
    the same after every step whatever its size.
    """
    head = ", ".join(format_number(x) for x in _head(d, PREVIEW_ITEMS))
    parts = [f"[{head}, …]"]
    d, sampled = _sample(d)
    n = d.numel()
    try:
        if d.dtype == torch.bool:
            parts.append(f"{int(d.count_nonzero().item()):,} True of {n:,}{' sampled' if sampled else ''}")
        elif d.is_floating_point() or d.dtype in (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8):
            if d.dim() >= 2 and not d.is_contiguous():
                # Row by row first: over a strided sample as a whole, aminmax copies it (4 MB).
                low, high = torch.aminmax(d, dim=-1)
                mn, mx = low.min(), high.max()
            else:  # a contiguous tensor flat (by rows, a 128 x 1568 matrix takes 18 times as long)
                mn, mx = torch.aminmax(d.reshape(-1))
            half = d.dtype in (torch.float16, torch.bfloat16)
            mean = (
                d.sum(dtype=torch.float64).item() / n
                if not d.is_floating_point()
                else d.mean(dtype=torch.float32 if half else None).item()
            )
            low_, high_ = mn.item(), mx.item()
            text = f"min {format_number(low_)} max {format_number(high_)} mean {format_number(float(mean))}"
            text += _spread(d, n, float(mean), low_, high_, half)
            parts.append(text + (f" (of {n:,} sampled values)" if sampled else ""))
    except (RuntimeError, TypeError):  # some dtypes/devices lack a reduction
        pass
    return " ".join(parts)


HISTOGRAM_BINS = 8
HISTOGRAM_SAMPLE = 1024
"""The histogram of a large tensor counts an evenly spaced sample of at least this many of its
values (its bars are drawn eight levels high, and its range is the whole tensor's min and max)."""
BARS = " ▁▂▃▄▅▆▇█"


def _spaced(d: torch.Tensor, n: int) -> torch.Tensor:
    """``HISTOGRAM_SAMPLE`` to twice as many values of ``d``, evenly spaced in row-major order,
    without copying the tensor (a strided view, or a gather of those few values)."""
    if d.is_contiguous():
        return d.view(-1)[:: max(1, n // HISTOGRAM_SAMPLE)]
    k = min(n, HISTOGRAM_SAMPLE)
    at = torch.arange(k, device=d.device, dtype=torch.int64) * (n - 1) // max(k - 1, 1)
    return torch.take(d, at)


def _spread(d: torch.Tensor, n: int, mean: float, low: float, high: float, half: bool) -> str:
    """`` std S hist ▁▂▄▆█▆▃▁``: the standard deviation and a histogram, measured on the tensor's
    device ('' where they can't be: NaN, infinities, a dtype without the reductions).

    The standard deviation comes from the 2-norm (one pass, as fast as the mean), the histogram
    from an evenly spaced sample (``_spaced``); where the mean dwarfs the spread, so that the
    norm's rounding could swamp it, and for integers, the deviation is that of the sample."""
    if not (math.isfinite(low) and math.isfinite(high)) or n < 2:
        return ""
    try:
        sample = _spaced(d, n)
        if not sample.is_floating_point() or half:
            sample = sample.to(torch.float32)
        var = -1.0
        if d.is_floating_point():
            norm = float(torch.linalg.vector_norm(d, dtype=torch.float32 if half else None).item())
            var = (norm * norm - n * mean * mean) / (n - 1)
        if not math.isfinite(var) or var <= 1e-4 * mean * mean:
            var = float(sample.to(torch.float64).var().item()) if sample.numel() > 1 else 0.0
        bars = ""
        if high > low:
            counts = torch.histc(sample, bins=HISTOGRAM_BINS, min=low, max=high).tolist()
            top = max(counts) or 1.0
            levels = [math.ceil(c / top * 8) for c in counts]
            levels[0], levels[-1] = max(levels[0], 1), max(levels[-1], 1)  # they hold the min and the max
            bars = " hist " + "".join(BARS[v] for v in levels)
        return f" std {format_number(math.sqrt(max(var, 0.0)))}{bars}"
    except (RuntimeError, TypeError, ValueError, OverflowError):
        return ""


def tensor_values(d: torch.Tensor, max_values: int) -> tuple[Any, str]:
    """(values for JSON or None, preview text)."""
    n = d.numel()
    if n <= max_values:
        try:
            raw = d.tolist()
        except (RuntimeError, TypeError):
            return None, f"<{d.dtype} values unavailable>"
        return json_values(raw), format_nested(raw)
    return None, summarize(d)


def content_key(d: torch.Tensor, max_values: int) -> tuple[Any, ...] | None:
    """(dtype, shape, bytes in row-major order) of a small CPU tensor; None where NumPy can't view it.

    A contiguous tensor's bytes are read where they are (the caller checked that its
    elements lie inside its storage); a conjugate or negative view holds other values
    than its bytes, so it is copied like any other layout.
    """
    n = d.numel()
    if d.device.type != "cpu" or n > max_values:
        return None
    plain = d.layout is torch.strided and not (d.is_nested or d.is_quantized or d.is_conj() or d.is_neg())
    if plain and d.is_contiguous():
        raw = ctypes.string_at(d.data_ptr(), n * d.element_size()) if n else b""
        return d.dtype, tuple(d.shape), raw
    try:
        # A copy: NumPy viewing the tensor's own memory would make its storage unresizable.
        raw = d.clone(memory_format=torch.contiguous_format).numpy().tobytes()
    except (RuntimeError, TypeError, ValueError):  # bfloat16, conjugate/negative bits, ...
        return None
    return d.dtype, tuple(d.shape), raw
