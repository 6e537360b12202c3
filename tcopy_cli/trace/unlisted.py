"""The bytes of storages the script keeps alive that no tensor record lists (for --max-bytes)."""

from __future__ import annotations

from typing import Any

import torch

from tcopy_cli.trace.graph import GraphWalk, grad_of
from tcopy_cli.trace.names import SCALAR_TYPES, SEQUENCES, module_tensors

# Items looked at per step when counting bytes that no record lists (tensors in sets).
_BYTE_COUNT_BUDGET = 100_000


def unlisted_bytes(
    ns: dict[str, Any], walk: GraphWalk, counted: set[int], saved: list[torch.Tensor], listed: set[int]
) -> int:
    """Bytes of storages the script keeps alive that no record lists, for --max-bytes.

    Tensors in sets, or past the items the records show of a long list, anywhere in the
    script's containers, and those of modules there whose tensors the records do not all show
    (``listed``: the ids of those whose tensors they do); and tensors the autograd graph holds:
    ``saved`` for backward (as ``SavedTensorTracker.update`` read them from the walked nodes),
    or leaves behind it. ``counted`` holds the data pointers of storages already in the total.
    """
    extra: dict[int, int] = {}

    def add(t: torch.Tensor) -> None:
        try:
            st = t.untyped_storage()
            ptr, nbytes = int(st.data_ptr()), int(st.nbytes())
        except (RuntimeError, NotImplementedError, ValueError):  # ValueError: a lazy parameter
            return
        if ptr not in counted:
            extra[ptr] = max(extra.get(ptr, 0), nbytes)

    stack: list[Any] = list(ns.values())
    seen: set[int] = set()
    budget = _BYTE_COUNT_BUDGET
    while stack and budget > 0:
        value = stack.pop()
        budget -= 1
        if isinstance(value, torch.Tensor):
            add(value)  # counted once: storages already in the total are skipped
            grad = grad_of(value)
            if grad is not None:
                add(grad)
            continue
        if isinstance(value, torch.nn.Module):
            if id(value) not in seen and id(value) not in listed:
                seen.add(id(value))
                stack.extend(t for _, t in module_tensors(value) if t is not None)
            continue
        if isinstance(value, (list, tuple, dict, set, frozenset)) and not isinstance(value, torch.Size):
            if id(value) in seen:
                continue
            seen.add(id(value))
            items = value.values() if isinstance(value, dict) else value
            # Numbers and strings hold no tensor: a container of only those is passed over
            # at C speed.
            if SCALAR_TYPES.issuperset(map(type, items)):
                continue
            for item in items:
                kind = type(item)
                if kind in SCALAR_TYPES or (kind in SEQUENCES and SCALAR_TYPES.issuperset(map(type, item))):
                    continue  # (a list or tuple of those: a sentence's words, a pair of numbers)
                stack.append(item)
    for node in walk.nodes.values():
        variable = getattr(node, "variable", None)
        if isinstance(variable, torch.Tensor):
            add(variable)
            grad = grad_of(variable)
            if grad is not None:
                add(grad)
    for t in saved:
        add(t)
    return sum(extra.values())


__all__ = ["unlisted_bytes"]
