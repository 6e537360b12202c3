"""Names of list items written together: ``xs[0…29]`` for ``xs[0]``, ``xs[1]``, ..., ``xs[29]``."""

from __future__ import annotations

import re

from tcopy_cli.trace.records import MAX_LISTED_ITEMS, MAX_VISITED_ITEMS

ITEM = re.compile(r"(.*)\[(0|[1-9]\d*)\]")
INDEX_RUN = 3
"""Consecutive items of one list written as one name from this many on: ``xs[0…29]``."""


def index_runs(names: list[str]) -> list[str]:
    """``names``, where consecutive items of one list (``xs[0]``, ``xs[1]``, ..., ``xs[29]``, also
    with other names between them) are written as one, ``xs[0…29]``, at the place of the first."""
    runs: dict[str, list[list[tuple[int, str]]]] = {}
    for name in names:
        m = ITEM.fullmatch(name)
        if m is None:
            continue
        base, index = m.group(1), int(m.group(2))
        groups = runs.setdefault(base, [])
        if groups and groups[-1][-1][0] + 1 == index:
            groups[-1].append((index, name))
        else:
            groups.append([(index, name)])
    joined: dict[str, str | None] = {}
    for base, groups in runs.items():
        for run in groups:
            if len(run) >= INDEX_RUN:
                joined[run[0][1]] = f"{base}[{run[0][0]}…{run[-1][0]}]"
                joined.update({name: None for _, name in run[1:]})
    out: list[str] = []
    for name in names:
        if name not in joined:
            out.append(name)
        elif (text := joined[name]) is not None:
            out.append(text)
    return out


def unlisted_text(unlisted: dict[str, int]) -> str:
    """``not listed: xs (500 more items) ...``: the items past those a step's records list."""
    parts = [f"{name} ({count:,} more item{'' if count == 1 else 's'})" for name, count in unlisted.items()]
    return (
        f"not listed: {', '.join(parts)}; tcopy lists the first {MAX_LISTED_ITEMS:,} items of a list, tuple"
        f" or dict, and looks at {MAX_VISITED_ITEMS:,} items of them in all at each step"
    )


def unlisted_change(moved: int) -> str:
    """``3 more items not listed`` (``moved`` > 0) or ``1 fewer item not listed``."""
    count = abs(moved)
    return f"{count:,} {'more' if moved > 0 else 'fewer'} item{'' if count == 1 else 's'} not listed"
