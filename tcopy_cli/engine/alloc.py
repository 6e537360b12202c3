"""Size estimates made before a call allocates, so huge tensors are refused up front.

Covers factories, repeat-like methods, concatenation, matrix products and
broadcasting between tensor arguments. Anything not estimated here is still checked
right after the call (result size) and after the step (total bytes).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

_SIZE_FACTORIES = frozenset(
    """
        zeros ones empty rand randn FloatTensor DoubleTensor HalfTensor BFloat16Tensor
        LongTensor IntTensor ShortTensor CharTensor ByteTensor BoolTensor Tensor new_zeros
        new_ones new_empty resize_ empty_strided new
    """.split()
)


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, torch.Tensor) and value.numel() == 1 and not value.is_floating_point():
        return int(value.item())
    return None


def _size_from(args: Sequence[Any]) -> list[int] | None:
    """Sizes given as ints (varargs) or as one sequence, like torch.zeros accepts."""
    if not args:
        return None
    first = args[0]
    if isinstance(first, (list, tuple, torch.Size)):
        dims = [_as_int(d) for d in first]
    else:
        dims = []
        for a in args:
            d = _as_int(a)
            if d is None:
                break
            dims.append(d)
    if not dims or any(d is None for d in dims):
        return None
    return [int(d) for d in dims]  # type: ignore[arg-type]


def broadcast_shapes(*shapes: Sequence[int]) -> list[int]:
    """NumPy/torch broadcasting of shapes, in plain Python.

    (torch.broadcast_shapes imports sympy on its first call: about half a second.)
    """
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for shape in shapes:
        for i, d in enumerate(shape, start=ndim - len(shape)):
            d = int(d)
            if out[i] == 1:
                out[i] = d
            elif d != 1 and d != out[i]:
                raise RuntimeError(f"shapes {[list(s) for s in shapes]} can't be broadcast together")
    return out


DATA_FACTORIES = frozenset({"tensor", "as_tensor", "asarray", "array", "new_tensor"})


def data_shape(data: Any, depth: int = 0) -> tuple[int, ...] | None:
    """The shape torch.tensor(data) / np.array(data) would have, from its first items.

    Numeric arrays must be rectangular, so a nested list's shape is its length and the
    shape of its first item; reading it that way costs nothing however large the list is.
    None: nested deeper than any array could be.
    """
    if isinstance(data, (torch.Tensor, np.ndarray)):
        return tuple(int(d) for d in data.shape)
    if not isinstance(data, (list, tuple)):
        return ()
    if not data:
        return (0,)
    if depth > 32:
        return None
    inner = data_shape(data[0], depth + 1)
    return None if inner is None else (len(data), *inner)


def data_numel(data: Any, depth: int = 0) -> int | None:
    """Elements torch.tensor(data) / np.array(data) would hold (see ``data_shape``)."""
    shape = data_shape(data, depth)
    return None if shape is None else _prod(shape)


def _prod(dims: Sequence[int]) -> int:
    return math.prod(max(d, 0) for d in dims)


def _tensors(values: Sequence[Any]) -> list[torch.Tensor]:
    out: list[torch.Tensor] = []
    for v in values:
        if isinstance(v, torch.Tensor):
            out.append(v)
        elif isinstance(v, (list, tuple)) and len(v) <= 10_000:
            out.extend(x for x in v if isinstance(x, torch.Tensor))
    return out


def _matmul_numel(a: torch.Tensor, b: torch.Tensor) -> int | None:
    if a.dim() == 0 or b.dim() == 0:
        return None
    n = a.shape[-2] if a.dim() >= 2 else 1
    m = b.shape[-1] if b.dim() >= 2 else 1
    batch_a = list(a.shape[:-2])
    batch_b = list(b.shape[:-2])
    try:
        batch = list(broadcast_shapes(tuple(batch_a), tuple(batch_b)))
    except RuntimeError:
        return None
    return _prod(batch) * n * m


GROWING = frozenset(
    """
    cat concat concatenate stack hstack vstack dstack column_stack block_diag matmul mm bmm __matmul__
    cartesian_prod outer ger kron cdist full new_full randint normal arange linspace logspace eye tril_indices
    triu_indices randperm repeat tile repeat_interleave diag diagflat diag_embed vander histc bincount
    combinations multinomial einsum one_hot pad tensordot embedding interpolate empty_strided
    """.split()
)
"""Calls whose result can be far larger than their tensor arguments, sized before they run (with the
factories); any other call's result is checked right after it returns."""
ESTIMATED = GROWING | _SIZE_FACTORIES | DATA_FACTORIES
"""Every call ``estimate_numel`` sizes before it runs by its name (any other that broadcasts tensors of
different shapes is sized by their broadcast shape)."""


def estimate_numel(
    name: str, args: Sequence[Any], kwargs: dict[str, Any], self_tensor: torch.Tensor | None = None
) -> int | None:
    """Elements the call ``name(*args, **kwargs)`` would allocate, when it can be told."""
    if name in DATA_FACTORIES and args:
        return data_numel(args[0])
    size_kw = kwargs.get("size")
    if name == "empty_strided":
        # The memory spans the largest offset the strides reach, not just numel.
        dims = _size_from([size_kw]) if size_kw is not None else _size_from(args[:1])
        stride_kw = kwargs.get("stride")
        strides = _size_from([stride_kw]) if stride_kw is not None else _size_from(args[1:2])
        if dims is None:
            return None
        if strides is None or len(strides) != len(dims) or any(d <= 0 for d in dims):
            return _prod(dims)
        return max(_prod(dims), 1 + sum((d - 1) * abs(st) for d, st in zip(dims, strides)))
    if name in _SIZE_FACTORIES:
        if name == "Tensor" or name.endswith("Tensor"):
            # Legacy constructors allocate for int sizes, copy for data.
            if args and all(_as_int(a) is not None for a in args):
                return _prod(_size_from(args) or [])
            return None
        dims = _size_from([size_kw]) if size_kw is not None else _size_from(args)
        return _prod(dims) if dims is not None else None
    if name in ("full", "new_full"):
        dims = _size_from([size_kw]) if size_kw is not None else _size_from(args[:1])
        return _prod(dims) if dims is not None else None
    if name == "randint":
        dims = (
            _size_from([size_kw])
            if size_kw is not None
            else (_size_from([args[-1]]) if args and isinstance(args[-1], (list, tuple, torch.Size)) else None)
        )
        return _prod(dims) if dims is not None else None
    if name == "normal" and (size_kw is not None or len(args) > 2):
        # normal(mean, std, size): floats drawn into a new tensor of that size (with
        # tensor means or stds the result takes their broadcast shape: estimated below).
        dims = _size_from([size_kw if size_kw is not None else args[2]])
        if dims is not None:
            return _prod(dims)
    if name in ("arange",):
        nums = [a for a in args if isinstance(a, (int, float)) and not isinstance(a, bool)]
        if not nums:
            return None
        start, end, step = (
            (0.0, nums[0], 1.0)
            if len(nums) == 1
            else (nums[0], nums[1], nums[2] if len(nums) > 2 else kwargs.get("step", 1))
        )
        try:
            return max(0, math.ceil((float(end) - float(start)) / float(step)))
        except (ZeroDivisionError, OverflowError, ValueError, TypeError):
            return None
    if name in ("linspace", "logspace"):
        steps = kwargs.get("steps", args[2] if len(args) > 2 else None)
        return _as_int(steps)
    if name == "eye":
        n = _as_int(args[0]) if args else _as_int(kwargs.get("n"))
        m = _as_int(args[1]) if len(args) > 1 else _as_int(kwargs.get("m", n))
        return None if n is None or m is None else max(n, 0) * max(m, 0)
    if name in ("tril_indices", "triu_indices"):
        r = _as_int(args[0]) if args else None
        c = _as_int(args[1]) if len(args) > 1 else None
        return None if r is None or c is None else 2 * max(r, 0) * max(c, 0)
    if name == "randperm":
        return _as_int(args[0]) if args else None
    if name in ("repeat", "tile") and self_tensor is not None:
        dims = _size_from(args) or _size_from([kwargs.get("dims", kwargs.get("repeats"))] if kwargs else [])
        if dims is None:
            return None
        shape = [1] * max(0, len(dims) - self_tensor.dim()) + list(self_tensor.shape)
        dims = [1] * max(0, len(shape) - len(dims)) + dims
        return _prod([s * d for s, d in zip(shape, dims)])
    if name in ("repeat", "tile") and args and isinstance(args[0], torch.Tensor):
        return estimate_numel(name, args[1:], kwargs, args[0])
    if name == "repeat_interleave":
        src = self_tensor if self_tensor is not None else (args[0] if args else None)
        reps = args[0] if self_tensor is not None and args else (args[1] if len(args) > 1 else kwargs.get("repeats"))
        r = _as_int(reps)
        if isinstance(src, torch.Tensor) and r is not None:
            return src.numel() * max(r, 0)
        return None
    src = self_tensor if self_tensor is not None else (args[0] if args and isinstance(args[0], torch.Tensor) else None)
    rest = args if self_tensor is not None else args[1:]
    if name in ("diag", "diagflat", "diag_embed") and src is not None:
        n = src.numel() if name == "diagflat" or src.dim() <= 1 else None
        if name == "diag_embed":
            last = src.shape[-1] if src.dim() else 1
            return src.numel() * last
        return None if n is None else n * n
    if name == "vander" and src is not None:
        cols = _as_int(rest[0]) if rest else _as_int(kwargs.get("N"))
        n = src.numel()
        return n * (cols if cols is not None else n)
    if name == "histc":
        bins = _as_int(rest[0]) if rest else _as_int(kwargs.get("bins", 100))
        return bins
    if name == "bincount" and src is not None:
        minlength = _as_int(kwargs.get("minlength", rest[1] if len(rest) > 1 else 0)) or 0
        top = int(src.max().item()) + 1 if src.numel() and not src.is_floating_point() else 0
        return max(minlength, top)
    if name == "combinations" and src is not None:
        r = _as_int(kwargs.get("r", rest[0] if rest else 2)) or 2
        return math.comb(src.numel(), r) * r if r >= 0 else None
    if name == "multinomial" and src is not None:
        k = _as_int(rest[0]) if rest else _as_int(kwargs.get("num_samples"))
        rows = src.shape[0] if src.dim() == 2 else 1
        return None if k is None else k * rows
    if name == "einsum":
        return einsum_numel(args)
    if name == "one_hot" and src is not None:
        classes = _as_int(rest[0]) if rest else _as_int(kwargs.get("num_classes", -1))
        if classes is None:
            return None
        if classes < 0:  # one class per value up to the largest
            if not src.numel() or src.is_floating_point() or src.is_complex() or src.dtype == torch.bool:
                return None
            classes = int(src.max().item()) + 1
        return src.numel() * classes
    if name in _NAMED and self_tensor is None:
        # Functions whose size the arguments tell, by position or by keyword.
        given = {**dict(zip(_NAMED[name], args)), **kwargs}
        if name == "pad" and isinstance(given.get("input"), torch.Tensor):
            return _pad_numel(given["input"], given.get("pad"))
        a, b = given.get("a"), given.get("b")
        if name == "tensordot" and isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
            return _tensordot_numel(a, b, given.get("dims", 2))
        idx, weight = given.get("input"), given.get("weight")
        if name == "embedding" and isinstance(idx, torch.Tensor) and isinstance(weight, torch.Tensor):
            # F.embedding(input, weight): a row of weight for each index
            return idx.numel() * weight.shape[1] if weight.dim() == 2 else None
        if name == "interpolate" and isinstance(given.get("input"), torch.Tensor):
            return _interpolate_numel(given["input"], given.get("size"), given.get("scale_factor"), given.get("mode"))
    tensors = _tensors(list(args) + list(kwargs.values()))
    if self_tensor is not None:
        tensors.insert(0, self_tensor)
    if name in ("cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack", "column_stack", "block_diag"):
        total = sum(t.numel() for t in tensors)
        if name == "block_diag":
            rows = sum(t.shape[0] if t.dim() > 0 else 1 for t in tensors)
            cols = sum(t.shape[-1] if t.dim() > 0 else 1 for t in tensors)
            return rows * cols
        return total
    if name in ("matmul", "mm", "bmm", "__matmul__") and len(tensors) >= 2:
        return _matmul_numel(tensors[0], tensors[1])
    if name == "cartesian_prod" and tensors:
        # One row per combination of every argument, one column per argument.
        return math.prod(t.numel() for t in tensors) * (len(tensors) if len(tensors) > 1 else 1)
    if name in ("outer", "ger", "kron", "cdist") and len(tensors) >= 2:
        return math.prod(t.numel() for t in tensors[:2])
    if len(tensors) >= 2:
        try:
            return _prod(broadcast_shapes(*(t.shape for t in tensors)))
        except RuntimeError:
            return None
    return None


_NAMED = {
    "pad": ("input", "pad"),
    "tensordot": ("a", "b", "dims"),
    "embedding": ("input", "weight"),
    "interpolate": ("input", "size", "scale_factor", "mode"),
}
"""The leading parameters of functions sized from named arguments (torch's names for them)."""


def _pad_numel(src: torch.Tensor, pad: Any) -> int | None:
    """Elements of ``F.pad(src, pad)``: (before, after) pairs from the last dimension backwards."""
    pads = _size_from([pad]) if isinstance(pad, (list, tuple)) else None
    if pads is None or len(pads) % 2 or len(pads) // 2 > src.dim():
        return None
    shape = list(src.shape)
    for i in range(len(pads) // 2):
        shape[-1 - i] += pads[2 * i] + pads[2 * i + 1]
    return _prod([max(d, 0) for d in shape])


_INTERPOLATE_DIMS = {"linear": 3, "bilinear": 4, "bicubic": 4, "trilinear": 5}
"""The input dimensions a mode of F.interpolate takes (torch refuses the others itself)."""


def _as_number(value: Any) -> float | None:
    """A scale factor as a float: Python and NumPy numbers, and one-element tensors or arrays."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float, np.integer, np.floating)):
        return float(value)
    try:
        if isinstance(value, np.ndarray) and value.size == 1 and value.dtype.kind in "iuf":
            return float(value.item())
        if (
            isinstance(value, torch.Tensor)
            and value.numel() == 1
            and not value.is_complex()
            and value.dtype != torch.bool
        ):
            return float(value.item())
    except (RuntimeError, ValueError, TypeError, OverflowError):  # a meta tensor has no value to read
        return None
    return None


def _interpolate_numel(x: torch.Tensor, size: Any, scale: Any, mode: Any) -> int | None:
    """Elements of ``F.interpolate(x, size, scale_factor)``: batch and channels times the new
    spatial sizes (given, or each input size times its factor, rounded down, as torch does).

    An empty batch or channel counts as one plane: torch builds its index and weight buffers
    for every output position all the same. A call torch itself refuses (both a size and a
    factor, a mode for other dimensions) is left to torch, for its own error.
    """
    spatial = list(x.shape[2:])
    if not spatial or (size is not None and scale is not None):
        return None
    if isinstance(mode, str) and _INTERPOLATE_DIMS.get(mode, x.dim()) != x.dim():
        return None
    if size is not None:
        out = _size_from([size]) if isinstance(size, (list, tuple)) else [_as_int(size)] * len(spatial)
    elif scale is not None:
        factors = [_as_number(f) for f in (scale if isinstance(scale, (list, tuple)) else [scale] * len(spatial))]
        if any(f is None or math.isnan(f) for f in factors) or len(factors) != len(spatial):
            return None
        products = [d * f for d, f in zip(spatial, factors)]  # type: ignore[operator]
        # an infinite size would not fit anywhere: counted as the largest a size can be
        out = [math.floor(p) if math.isfinite(p) else 2**63 for p in products]
    else:
        return None
    if out is None or any(d is None for d in out) or len(out) != len(spatial):
        return None
    return _prod([max(x.shape[0] * x.shape[1], 1), *out])  # type: ignore[list-item]


def _tensordot_numel(a: torch.Tensor, b: torch.Tensor, dims: Any) -> int | None:
    """Elements of ``torch.tensordot(a, b, dims)``: what is left of both after the contraction."""
    if isinstance(dims, torch.Tensor) and dims.dim() == 2:  # [[dims of a], [dims of b]]
        dims = dims.tolist()
    n = _as_int(dims)
    if n is not None:
        if not 0 <= n <= min(a.dim(), b.dim()):
            return None
        return _prod(list(a.shape[: a.dim() - n]) + list(b.shape[n:]))
    if isinstance(dims, (list, tuple)) and len(dims) == 2:
        pair = [
            [dims[0]] if _as_int(dims[0]) is not None else dims[0],
            [dims[1]] if _as_int(dims[1]) is not None else dims[1],
        ]
        da, db = ((_size_from([p]) if p else []) if isinstance(p, (list, tuple)) else None for p in pair)
        if da is None or db is None or len(da) != len(db):
            return None
        try:
            left = [d for i, d in enumerate(a.shape) if i not in {x % a.dim() for x in da}]
            right = [d for i, d in enumerate(b.shape) if i not in {x % b.dim() for x in db}]
        except ZeroDivisionError:  # a 0-d tensor has no dimension to contract
            return None
        return _prod(left + right)
    return None


def einsum_numel(args: Sequence[Any]) -> int | None:
    """Elements of ``torch.einsum(equation, *operands)``'s result, from the equation.

    Each output letter takes its size from the operands; ``...`` dimensions broadcast.
    Without ``->`` the output is every letter used once, in alphabetical order.
    """
    if not args or not isinstance(args[0], str):
        return None
    operands = list(args[1:])
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = list(operands[0])
    if not operands or not all(isinstance(t, torch.Tensor) for t in operands):
        return None
    lhs, arrow, rhs = args[0].replace(" ", "").partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        return None
    sizes: dict[str, int] = {}
    ellipses: list[list[int]] = []
    for term, t in zip(terms, operands):
        shape = [int(d) for d in t.shape]
        if "..." in term:
            head, _, tail = term.partition("...")
            middle = len(shape) - len(head) - len(tail)
            if middle < 0:
                return None
            ellipses.append(shape[len(head) : len(head) + middle])
            letters, dims = head + tail, shape[: len(head)] + shape[len(head) + middle :]
        else:
            letters, dims = term, shape
        if len(letters) != len(dims) or not all(c.isalpha() for c in letters):
            return None
        for c, d in zip(letters, dims):
            sizes[c] = d if sizes.get(c, 1) == 1 else sizes[c]
    try:
        broadcast = _prod(broadcast_shapes(*ellipses)) if ellipses else 1
    except RuntimeError:
        return None
    if arrow:
        out = [c for c in rhs if c.isalpha()]
        if "..." not in rhs:
            broadcast = 1
    else:
        used = "".join(terms)
        out = sorted(c for c in set(used) if c.isalpha() and used.count(c) == 1)
    if any(c not in sizes for c in out):
        return None
    return _prod([sizes[c] for c in out]) * broadcast
