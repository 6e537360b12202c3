"""Names of list items written together: ``xs[0…29]`` for ``xs[0]``, ``xs[1]``, ..., ``xs[29]``."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from tcopy_cli.trace.records import MAX_LISTED_ITEMS, MAX_VISITED_ITEMS

ITEM = re.compile(r"(.*)\[(0|[1-9]\d*)\]")
INDEX_RUN = 3
"""Consecutive items of one list written as one name from this many on: ``xs[0…29]``."""


def item_runs(names: Iterable[str], joins: Callable[[str, str], bool] | None = None) -> list[list[str]]:
    """Runs of ``INDEX_RUN`` or more consecutive items of one list among ``names`` (other names may
    stand between them), each in order; ``joins(a, b)``: whether item ``b`` may follow item ``a``."""
    runs: dict[str, list[list[tuple[int, str]]]] = {}
    for name in names:
        m = ITEM.fullmatch(name)
        if m is None:
            continue
        base, index = m.group(1), int(m.group(2))
        groups = runs.setdefault(base, [])
        last = groups[-1][-1] if groups else None
        if last is not None and last[0] + 1 == index and (joins is None or joins(last[1], name)):
            groups[-1].append((index, name))
        else:
            groups.append([(index, name)])
    return [[n for _, n in run] for groups in runs.values() for run in groups if len(run) >= INDEX_RUN]


def run_name(run: list[str]) -> str:
    """``xs[0…29]`` for a run of ``item_runs``."""
    first, last = ITEM.fullmatch(run[0]), ITEM.fullmatch(run[-1])
    assert first is not None and last is not None
    return f"{first.group(1)}[{first.group(2)}…{last.group(2)}]"


def index_runs(names: list[str]) -> list[str]:
    """``names``, where consecutive items of one list (``xs[0]``, ``xs[1]``, ..., ``xs[29]``, also
    with other names between them) are written as one, ``xs[0…29]``, at the place of the first."""
    runs = item_runs(names)
    first = {run[0]: run_name(run) for run in runs}
    rest = {name for run in runs for name in run[1:]}
    return [first.get(name, name) for name in names if name not in rest]


LAYER = re.compile(r"([^\[\]]*?)\.(0|[1-9]\d*)(\..+)")
"""``model.2.{weight,bias}``: an owner, a numbered layer (of a Sequential or ModuleList), the rest."""


INNER_LAYER = re.compile(r"([^\[\]]*)\.(0|[1-9]\d*)(\.[^\[\]]+)")
"""``model.blocks.2.1.weight``: the last numbered layer, after its owner (``model.blocks.2``)."""


def layer_sets(parts: list[str], layer: re.Pattern[str] = LAYER) -> list[str]:
    """``parts``, where names that differ only in one layer's number (``model.0.{weight,bias}``,
    ``model.2.{weight,bias}``) are written as one, ``model.{0,2}.{weight,bias}``, at the place of
    the first; ``INDEX_RUN`` or more consecutive numbers as a range, ``blocks.{0…11}.attn.q.weight``.
    The layer is the first numbered one in the name (before any ``[``); with ``INNER_LAYER``, the last."""
    groups: dict[tuple[str, str], list[str]] = {}
    for part in parts:
        m = layer.fullmatch(part)
        if m is not None:
            groups.setdefault((m[1], m[3]), []).append(m[2])
    out: list[str] = []
    for part in parts:
        m = layer.fullmatch(part)
        numbers = groups.get((m[1], m[3]), []) if m is not None else []
        if m is None or len(numbers) < 2:
            out.append(part)
        elif numbers[0] == m[2]:  # the first of its group: the group goes here
            out.append(f"{m[1]}.{{{_number_runs([int(n) for n in numbers])}}}{m[3]}")
    return out


OUTER_ITEM = re.compile(r"([^\[\]]*?)\[(0|[1-9]\d*)\]((?:\[|\.).+)")
"""``data[3][0]``, ``mods[3].weight``: a name, the index of an item, what follows it."""


def outer_item_runs(parts: list[str]) -> list[str]:
    """``parts``, where ``INDEX_RUN`` or more items in a row that differ only in their first index
    (``data[0][1]``, ``data[1][1]``, ``data[2][1]``) are written as one, ``data[0…2][1]``, at the
    place of the first (a list of pairs, a list of modules)."""
    groups: dict[tuple[str, str], list[int]] = {}
    for part in parts:
        m = OUTER_ITEM.fullmatch(part)
        if m is not None:
            groups.setdefault((m[1], m[3]), []).append(int(m[2]))
    runs: dict[tuple[str, str], dict[int, list[int]]] = {}  # first index of each run -> the run
    for key, numbers in groups.items():
        for run in _runs(numbers):
            if len(run) >= INDEX_RUN:
                runs.setdefault(key, {})[run[0]] = run
    out: list[str] = []
    for part in parts:
        m = OUTER_ITEM.fullmatch(part)
        found = runs.get((m[1], m[3]), {}) if m is not None else {}
        if m is None or not found:
            out.append(part)
            continue
        n = int(m[2])
        starting = found.get(n)
        if starting is not None:
            out.append(f"{m[1]}[{starting[0]}…{starting[-1]}]{m[3]}")
        elif not any(r[0] < n <= r[-1] for r in found.values()):
            out.append(part)
    return out


def _owner_split(name: str) -> tuple[str, str, str]:
    """``name.rpartition(".")`` at the last dot outside ``[...]`` (``d["a.b"]`` has no owner)."""
    depth = 0
    for i in range(len(name) - 1, -1, -1):
        ch = name[i]
        if ch == "]":
            depth += 1
        elif ch == "[":
            depth -= 1
        elif ch == "." and depth == 0:
            return name[:i], ".", name[i + 1 :]
    return "", "", name


def grouped_names(names: list[str], most: int = 6) -> str:
    """``model.fc1.{weight,bias}, model.fc2.weight``: names with one owner written together (and
    ``model.{0,2}.{weight,bias}``: owners that differ only in a layer's number, the first numbered
    one, then the last: ``model.blocks.{6…9}.{1,4}.num_batches_tracked``)."""
    groups: dict[str, list[str]] = {}
    for name in dict.fromkeys(names):
        owner, dot, leaf = _owner_split(name)
        if owner:
            groups.setdefault(owner + dot, []).append(leaf)
        else:  # a name with no owner stands alone: ``x, y``, not ``{x,y}``
            groups[name] = [""]
    parts = [prefix + (leaf[0] if len(leaf) == 1 else "{" + ",".join(leaf) + "}") for prefix, leaf in groups.items()]
    parts = outer_item_runs(layer_sets(layer_sets(index_runs(parts)), INNER_LAYER))
    return ", ".join(parts[:most]) + (f" +{len(parts) - most} more" if len(parts) > most else "")


def _runs(numbers: list[int]) -> list[list[int]]:
    """``numbers`` in runs of consecutive ones, in order."""
    runs: list[list[int]] = []
    for n in numbers:
        if runs and runs[-1][-1] + 1 == n:
            runs[-1].append(n)
        else:
            runs.append([n])
    return runs


def _number_runs(numbers: list[int]) -> str:
    """``0,2`` or ``0…11`` or ``0…5,7``: runs of ``INDEX_RUN`` or more consecutive numbers as ranges."""
    texts = []
    for run in _runs(numbers):
        texts += [f"{run[0]}…{run[-1]}"] if len(run) >= INDEX_RUN else [str(n) for n in run]
    return ",".join(texts)


def unlisted_text(unlisted: dict[str, int]) -> str:
    """``not listed: xs (500 more items) ...``: the items past those a step's records list."""
    parts = [f"{name} ({count:,} more item{'' if count == 1 else 's'})" for name, count in unlisted.items()]
    return (
        f"not listed: {', '.join(parts)}; tcopy lists the first {MAX_LISTED_ITEMS:,} items of a list, tuple"
        f" or dict, and looks at {MAX_VISITED_ITEMS:,} items (of these, and modules' parameters and buffers)"
        " in all at each step"
    )


def unlisted_change(moved: int) -> str:
    """``3 more items not listed`` (``moved`` > 0) or ``1 fewer item not listed``."""
    count = abs(moved)
    return f"{count:,} {'more' if moved > 0 else 'fewer'} item{'' if count == 1 else 's'} not listed"


def unlisted_pairs(old: dict[str, int], now: dict[str, int]) -> dict[str, tuple[int, int]]:
    """(before, after) for each container whose count of items not listed (``Step.unlisted``) changed."""
    counts = {name: (old.get(name, 0), now.get(name, 0)) for name in {**old, **now}}
    return {name: pair for name, pair in counts.items() if pair[0] != pair[1]}


_PIECE_BREAKS = re.compile(r"(?<=[.:])|(?=\[)")


def name_pieces(name: str) -> list[str]:
    """The pieces of a name: after a dot or a colon, before an index (``model.``, ``conv1.``,
    ``weight``; ``xs``, ``[3]``)."""
    return [p for p in _PIECE_BREAKS.split(name) if p]


def shortened(name: str, width: int, chars: bool = True) -> list[str]:
    """The ways of writing ``name`` in ``width`` columns on one line, best first: the name itself
    where it fits; else its first and last pieces with ``…`` for the middle ones, keeping as much
    of its end as fits, then of its start (``model.…conv1.weight``); else its last pieces alone
    (``…conv1.weight``); else (``chars``) its characters cut, the end kept (``disc…nator.weight``).
    A module row's name that ends in a group (``model.*.{running_mean,running_var}``) is first
    written with the group's first items and ``…`` for the rest (``model.*.{running_mean,…}``,
    ``model.*.{run…}``, ``model.*.{…}``, ``model.…{…}``): its start and its braces whole."""
    if len(name) <= width:
        return [name]
    braced = _braced(name, width)
    pieces = name_pieces(name)
    found: list[tuple[int, int, str]] = []
    for i in range(1, len(pieces)):
        for j in range(1, len(pieces) - i):
            text = "".join(pieces[:i]) + "…" + "".join(pieces[len(pieces) - j :])
            if len(text) <= width:
                found.append((-j, -len(text), text))
    out = braced + [text for _, _, text in sorted(found)]
    out += [t for j in range(len(pieces) - 1, 0, -1) if len(t := "…" + "".join(pieces[len(pieces) - j :])) <= width]
    if not chars:
        return out
    if width >= 2:
        out += [name[:head] + "…" + name[len(name) - (width - 1 - head) :] for head in range(min(4, width - 1), -1, -1)]
    elif width == 1:
        out.append("…")
    return list(dict.fromkeys(out))


def _braced(name: str, width: int) -> list[str]:
    """``name``'s closing group of names with fewer of its items, in ``width`` (most items first)."""
    if not name.endswith("}"):
        return []
    level, items, start = 0, list[str](), len(name) - 1
    for i in range(len(name) - 1, -1, -1):  # the group's items, from its end back to its "{"
        level += {"}": 1, "{": -1}.get(name[i], 0)
        if (level == 1 and name[i] == ",") or level == 0:
            items.insert(0, name[i + 1 : start])
            start = i
        if level == 0:
            break
    else:
        return []
    head = name[:start]
    forms = [head + "{" + "".join(item + "," for item in items[:k]) + "…}" for k in range(len(items) - 1, 0, -1)]
    forms += [head + "{" + items[0][:c] + "…}" for c in range(len(items[0]) - 1, -1, -1)]  # model.*.{run…}
    pieces = name_pieces(head)  # then fewer of the pieces before it: model.…{…}
    forms += ["".join(pieces[:i]) + "…{…}" for i in range(len(pieces) - 1, 0, -1)]
    return [form for form in forms if len(form) <= width]


def short_names(names: list[str], width: int, chars: bool = True) -> dict[str, str] | None:
    """Each name written in ``width`` columns (``shortened``), no two alike; None where that can't be.

    Where two names would be written alike, neither is: both take their next way (so that
    ``model.…conv1.weight`` never stands for one of two conv1 layers)."""
    whole = sorted(set(names))
    options = {name: [t for t in shortened(name, width, chars) if t == name or t not in whole] for name in whole}
    at = dict.fromkeys(whole, 0)
    while True:
        by_text: dict[str, list[str]] = {}
        for name in whole:
            if at[name] >= len(options[name]):
                return None
            by_text.setdefault(options[name][at[name]], []).append(name)
        clashes = [group for group in by_text.values() if len(group) > 1]
        if not clashes:
            return {name: options[name][at[name]] for name in whole}
        for group in clashes:
            for name in group:
                at[name] += 1


def unique_width(names: list[str], least: int, most: int) -> int:
    """The narrowest width from ``least`` to ``most`` at which ``short_names`` tells every name apart
    leaving out whole pieces only (never cutting one)."""
    for width in range(least, most + 1):
        if short_names(names, width, chars=False) is not None:
            return width
    return most


def common_end(a: str, b: str) -> int:
    """How many characters ``a`` and ``b`` end in alike (``b.1.weight`` and ``model.blocks.9.1.weight``: 9)."""
    n = 0
    while n < min(len(a), len(b)) and a[-1 - n] == b[-1 - n]:
        n += 1
    return n
