"""Which tensors, arrays and modules the script's names reach: ``walk_names``.

A name's value is looked into where it is a list, tuple or dict (``layers[0].weight``,
``opt_state["momentum"]``) or a module (its parameters and buffers, ``model.fc1.weight``),
within budgets that keep observing a step bounded however large the script's containers are.
Containers of numbers and strings (a vocabulary, a list of sentences) hold nothing to look for
and are passed over at C speed.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import torch

from tcopy_cli.trace.records import MAX_LISTED_ITEMS, MAX_VISITED_ITEMS

MAX_CONTAINER_DEPTH = 3
"""How deep containers are looked into (``xs[0][1][2]``)."""
SCALAR_TYPES = frozenset({int, float, bool, str, complex, type(None)})
"""Values that hold no tensor (a container of only these is passed over at C speed)."""
SEQUENCES = (list, tuple)
_CONTAINERS = (list, tuple, dict)


Walked = tuple[list[tuple[str, Any]], dict[str, int], set[int]]
"""``walk_names``: the (name, value) pairs, the containers cut short, and the ids of the modules
whose parameters and buffers are all among the pairs."""


_WALKED = (torch.Tensor, np.ndarray, list, tuple, dict, torch.nn.Module)
"""The items of a list, tuple or dict that are looked into: tensors, arrays, containers and
modules (``layers = [nn.Linear(4, 8), nn.Linear(8, 1)]`` lists ``layers[0].weight``)."""


def walk_names(ns: dict[str, Any]) -> Walked:
    """``iter_named(ns)``, with the containers whose items it did not all look at."""
    cut: dict[str, int] = {}
    listed: set[int] = set()
    return iter_named(ns, cut, listed), cut, listed


def iter_named(
    ns: dict[str, Any], cut: dict[str, int] | None = None, listed: set[int] | None = None
) -> list[tuple[str, Any]]:
    """(display name, value) for tensors and arrays reachable from script names.

    Containers are searched at most ``MAX_CONTAINER_DEPTH`` deep, their first
    ``MAX_LISTED_ITEMS`` items, and at most ``MAX_VISITED_ITEMS`` items in all per step, so
    nested lists can't make observing slow. ``cut``: filled with the containers whose items
    were not all looked at, and how many were not, where a tensor or array is among the items
    looked at or the ``MAX_LISTED_ITEMS`` after them (``_holds_tensor``); and the modules whose
    parameters and buffers the step's budget cut short, with how many tensors it left out.
    ``listed``: filled with the ids of the modules whose parameters and buffers were all given.
    """
    budget = [MAX_VISITED_ITEMS]
    found: list[tuple[str, Any]] = []
    for name, value in ns.items():
        _walk(name, value, 0, budget, found, cut, listed)
    return found


def _walk(
    name: str,
    value: Any,
    depth: int,
    budget: list[int],
    found: list[tuple[str, Any]],
    cut: dict[str, int] | None = None,
    listed: set[int] | None = None,
) -> None:
    """Add to ``found`` what ``value`` (named ``name``) is or holds."""
    if isinstance(value, torch.Tensor) and torch.nn.parameter.is_lazy(value):
        return  # a lazy module's parameter before its first forward: no memory, no facts yet
    if isinstance(value, (torch.Tensor, np.ndarray)):
        found.append((name, value))
        return
    if isinstance(value, torch.nn.Module):
        # Parameters and buffers as name.weight, name.fc.bias (each tensor once).
        seen: set[int] = set()
        pairs = module_tensors(value)
        for i, (pname, p) in enumerate(pairs):
            budget[0] -= 1
            if budget[0] <= 0:
                # The step's items ran out inside the module: its other parameters and buffers
                # are counted as not listed, as a long list's items are.
                rest = {id(q) for _, q in pairs[i:] if q is not None and not torch.nn.parameter.is_lazy(q)} - seen
                if cut is not None and rest:
                    cut[name] = len(rest)
                return
            if p is not None and id(p) not in seen and not torch.nn.parameter.is_lazy(p):
                seen.add(id(p))
                found.append((f"{name}.{pname}", p))
        if listed is not None:
            listed.add(id(value))
        return
    keyed = isinstance(value, dict)
    if depth >= MAX_CONTAINER_DEPTH or not (
        keyed or (isinstance(value, (list, tuple)) and not isinstance(value, torch.Size))
    ):
        return
    if budget[0] <= 0:  # the step's items were all looked at before this container's turn
        if cut is not None and _holds_tensor(value, 0, keyed):
            cut[name] = len(value)
        return
    if _passed_over(value, keyed, budget, depth):
        return
    looked, before = 0, len(found)
    for i, (k, item) in enumerate(value.items() if keyed else enumerate(value[:MAX_LISTED_ITEMS])):
        budget[0] -= 1
        if i >= MAX_LISTED_ITEMS or budget[0] <= 0:
            break
        looked = i + 1
        if not isinstance(item, _WALKED):
            continue
        if (
            type(item) in _CONTAINERS
            and depth + 1 < MAX_CONTAINER_DEPTH
            and budget[0] > 0
            and _passed_over(item, type(item) is dict, budget, depth + 1)
        ):
            continue  # (what _walk would do with it, without naming it first)
        key = (f'"{k}"' if isinstance(k, str) else repr(k)) if keyed else k
        _walk(f"{name}[{key}]", item, depth + 1, budget, found, cut, listed)
    if cut is not None and looked < len(value) and (len(found) > before or _holds_tensor(value, looked, keyed)):
        cut[name] = len(value) - looked


def _passed_over(value: Any, keyed: bool, budget: list[int], depth: int) -> bool:
    """Whether ``value`` (a container ``depth`` deep) holds no tensor, array or module for ``_walk``
    to find (numbers and strings, and containers of those: a vocabulary, a list of sentences), with
    room for all it would look at in the step's budget; then it is passed over without naming
    each item, the budget counted as ``_walk`` counts it."""
    n = _plain_items(value, keyed, depth)
    if n is None or n >= budget[0]:
        return False
    budget[0] -= n
    return True


def _plain_items(value: Any, keyed: bool, depth: int) -> int | None:
    """The items ``_walk`` would look at in ``value``, if none of them is a tensor, an array or a
    module (else None)."""
    if len(value) > MAX_LISTED_ITEMS:
        return None
    items = value.values() if keyed else value
    if SCALAR_TYPES.issuperset(map(type, items)):
        return len(value)
    n = len(value)
    for item in items:
        kind = type(item)
        if kind in SCALAR_TYPES:
            continue
        if kind in _CONTAINERS:
            if depth + 1 < MAX_CONTAINER_DEPTH:
                inner = _plain_items(item, kind is dict, depth + 1)
                if inner is None:
                    return None
                n += inner
        elif isinstance(item, _WALKED):
            return None
    return n


def _holds_tensor(value: Any, start: int, keyed: bool) -> bool:
    """Whether one of the items from ``start`` on (at most ``MAX_LISTED_ITEMS`` of them) is a
    tensor or array: a container cut off (past its first items, or by the step's item budget)
    before one was found among the items looked at."""
    items = itertools.islice(value.values() if keyed else value, start, start + MAX_LISTED_ITEMS)
    return any(isinstance(v, (torch.Tensor, np.ndarray)) or _module_holds_tensor(v) for v in items)


def _module_holds_tensor(value: Any) -> bool:
    """Whether ``value`` is a module with a parameter or a buffer."""
    if not isinstance(value, torch.nn.Module):
        return False
    return any(t is not None and not torch.nn.parameter.is_lazy(t) for _, t in module_tensors(value))


def module_tensors(module: torch.nn.Module) -> list[tuple[str, Any]]:
    """A module's named parameters, then its named buffers, by nn.Module's own methods (never a
    script class's overrides); none for a module that can't say (--trust: a subclass whose
    ``__init__`` never called nn.Module's has no ``_parameters``; python fails on its first use)."""
    try:
        return [*torch.nn.Module.named_parameters(module), *torch.nn.Module.named_buffers(module)]
    except Exception:
        return []


__all__ = ["MAX_CONTAINER_DEPTH", "SCALAR_TYPES", "SEQUENCES", "Walked", "iter_named", "module_tensors", "walk_names"]
