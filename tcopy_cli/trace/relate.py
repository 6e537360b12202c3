"""How one result of an operation relates to one of its inputs, measured when the operation ends.

The same object (``is``); a view (same storage and, by ``graph.version_groups``'s probe, the
same version counter); an alias with its own counter; memory shared with an array; new memory
holding the input's values (a copy); new memory with other values. ``reaches`` says whether the
result's grad_fn reaches the input (a bounded walk).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import torch

from tcopy_cli.trace.graph import node_key, safe_grad_fn, same_values, version_groups, walk_nodes

# Nodes looked at when deciding whether a result's graph reaches an input.
REACH_BUDGET = 64
# Results compared value by value with their inputs (larger ones are "new" or "copy" by shape only).
COMPARE_ELEMENTS = 4096

_ARRAY = np.ndarray


def storage_ptr(t: torch.Tensor) -> tuple[str, int, int] | None:
    try:
        st = t.untyped_storage()
        return str(t.device), int(st.data_ptr()), int(st.nbytes())
    except (RuntimeError, NotImplementedError):
        return None


def version(t: torch.Tensor) -> int:
    try:
        return int(t._version)
    except RuntimeError:  # inference tensors have no counter
        return -1


def reaches(result: torch.Tensor, source: torch.Tensor, budget: int = REACH_BUDGET) -> bool:
    """True when backward from ``result`` reaches ``source`` (its grad_fn or its leaf), looking
    at most at ``budget`` graph nodes."""
    fn = safe_grad_fn(result)
    if fn is None or not source.requires_grad:
        return False
    src_fn = safe_grad_fn(source)
    target = node_key(src_fn) if src_fn is not None else id(source)
    return any(key == target for key, _ in itertools.islice(walk_nodes(fn), budget))


def _array_bounds(a: np.ndarray) -> tuple[int, int]:
    p = int(a.__array_interface__["data"][0])
    return p, p + int(a.nbytes)


def _tensor_bounds(t: torch.Tensor) -> tuple[int, int] | None:
    if t.device.type != "cpu":
        return None
    st = storage_ptr(t)
    if st is None:
        return None
    return st[1], st[1] + st[2]


def _same_bytes(result: Any, source: Any) -> bool:
    """A tensor and an array (either way round) over common bytes."""
    t, a = (result, source) if isinstance(result, torch.Tensor) else (source, result)
    tb = _tensor_bounds(t)
    if tb is None or a.nbytes == 0:
        return False
    lo, hi = _array_bounds(a)
    return lo < tb[1] and tb[0] < hi


def _equal_values(result: Any, source: Any) -> bool:
    """Same shape and the same values (after conversion to the result's dtype), for small ones."""
    try:
        if isinstance(result, torch.Tensor) and isinstance(source, torch.Tensor):
            if result.shape != source.shape or result.numel() > COMPARE_ELEMENTS:
                return False
            a = result.detach()
            b = source.detach().to(device=a.device, dtype=a.dtype)
            return same_values(a, b)
        if isinstance(result, torch.Tensor) and isinstance(source, _ARRAY):
            if tuple(result.shape) != source.shape or result.numel() > COMPARE_ELEMENTS:
                return False
            a = result.detach()
            return same_values(a, torch.as_tensor(source).to(device=a.device, dtype=a.dtype))
        if isinstance(result, _ARRAY) and isinstance(source, torch.Tensor):
            if result.shape != tuple(source.shape) or result.size > COMPARE_ELEMENTS:
                return False
            a = torch.as_tensor(result)
            return same_values(a, source.detach().cpu().to(a.dtype))
    except (RuntimeError, TypeError, ValueError):
        return False
    return False


COPYING_NODES = frozenset(
    {
        "CloneBackward0",
        "ToCopyBackward0",
        "CopyBackwards",
        "UnsafeViewBackward0",
        "IndexBackward0",
        "IndexSelectBackward0",
        "GatherBackward0",
        "MaskedSelectBackward0",
        "CatBackward0",
        "StackBackward0",
        "RepeatBackward0",
        "NarrowCopyBackward0",
    }
)
"""Autograd nodes of operations that move values without computing new ones (a copy)."""


def _copying_node(t: torch.Tensor) -> bool:
    name = type(safe_grad_fn(t)).__name__
    return name in COPYING_NODES or name.endswith("_copy")


MOVING_CALLS = frozenset(
    {
        "clone", "contiguous", "detach", "to", "type", "type_as", "float", "double", "half", "bfloat16",
        "int", "long", "short", "bool", "byte", "char", "cpu", "cuda", "reshape", "reshape_as", "flatten",
        "ravel", "view", "view_as", "unflatten", "squeeze", "unsqueeze", "tensor", "as_tensor", "asarray",
        "array", "from_numpy", "numpy", "copy", "copy_", "deepcopy", "new_tensor", "Parameter", "cat", "concat",
        "concatenate", "index_select", "gather", "masked_select", "narrow_copy", "repeat", "tile",
    }
)  # fmt: skip
"""Calls that move values without computing new ones. Without a graph node to show it (no
grad), a result equal to its input is called a copy only when one of these made it: equal
values alone (``relu`` of positive numbers, ``b * 2`` of zeros) are no provenance."""

MOVING_KINDS = frozenset({"index", "bind", "rebind", "iterate"})


def moves_values(kind: str, function: str) -> bool:
    """Whether an operation of this kind and function only moves values (indexing, a copy call)."""
    return kind in MOVING_KINDS or function in MOVING_CALLS


def relation(result: Any, source: Any, moving: bool = True) -> tuple[str, bool]:
    """(relation, graph) of one result to one input, measured now. ``moving``: the operation
    only moves values (see ``moves_values``); otherwise a result with no graph node is never
    called a copy of the input, whatever its values."""
    if result is source:
        return "same-object", False
    if isinstance(result, torch.Tensor) and isinstance(source, torch.Tensor):
        rs, ss = storage_ptr(result), storage_ptr(source)
        if rs is not None and rs == ss and rs[2] > 0:
            shared = version_groups([[("r", result), ("s", source)]])
            kind = "view" if "s" in shared.get("r", []) else "alias"
            return kind, reaches(result, source)
        graph = reaches(result, source)
        # Equal values alone don't make a copy: relu(w * x) can equal w (and x). Where
        # autograd recorded the operation, its node must be one that moves values unchanged.
        node = safe_grad_fn(result)
        copied = moving and (node is None or _copying_node(result)) and _equal_values(result, source)
        return ("copy" if copied else "new"), graph
    if _same_bytes(result, source):
        return "shares-memory", False
    return ("copy" if moving and _equal_values(result, source) else "new"), False
