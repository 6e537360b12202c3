"""How the records name what a step saw: a running function's local (``f:x``), an item of a list,
tuple or dict a name holds (``xs[0]``, ``d["k"]``), and the items a container gained.

Nothing here imports torch.
"""

from __future__ import annotations

from collections.abc import Callable

from tcopy_cli.trace.records import TensorRecord


def is_local(name: str) -> bool:
    """Whether ``name`` is a running function's local (``f:x``, ``f:xs[0]``); a dict key may hold a
    colon (``d["a:b"]``), so only the part before the first ``[`` counts."""
    return ":" in name.split("[", 1)[0]


def script_name(name: str) -> str:
    """``name`` as the script writes it: a function's local without its function (``f:h`` -> ``h``,
    ``f:xs[0]`` -> ``xs[0]``); any other name as it is (``d["a:b"]`` keeps its key)."""
    head, bracket, rest = name.partition("[")
    return head.rsplit(":", 1)[-1] + bracket + rest


def is_item(name: str) -> bool:
    """Whether ``name`` is an item of a container a name holds (``xs[3]``, ``d["k"]``), not a function's local."""
    return name.endswith("]") and not is_local(name)


def added_items(
    before: tuple[dict[str, TensorRecord], dict[str, int]],
    after: tuple[dict[str, TensorRecord], dict[str, int]],
    item: Callable[[str], bool] = is_item,
) -> list[str]:
    """Items a list, tuple or dict gained from ``before`` to ``after``, each (tensors, unlisted counts):
    in a container that now has more items (listed or not), the items whose tensor object was not
    in it before (``xs.insert(0, t)`` added ``xs[0]``; the others moved). ``item`` tells the names
    of items (by default not those of a function's locals)."""
    (old, unlisted_before), (tensors, unlisted) = before, after
    had: dict[str, set[int]] = {}
    count: dict[str, int] = {}
    for name, r in old.items():
        if item(name):
            base = name[: name.rindex("[")]
            had.setdefault(base, set()).add(r.object_id)
            count[base] = count.get(base, 0) + 1
    now: dict[str, list[tuple[str, int]]] = {}
    for name, r in tensors.items():
        if item(name):
            now.setdefault(name[: name.rindex("[")], []).append((name, r.object_id))
    out: list[str] = []
    for base, items in now.items():
        if len(items) + unlisted.get(base, 0) > count.get(base, 0) + unlisted_before.get(base, 0):
            out += [name for name, oid in items if oid not in had.get(base, ())]
    return out
