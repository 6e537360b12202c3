"""Names of list items written together: ``xs[0…29]`` for ``xs[0]``, ``xs[1]``, ..., ``xs[29]``."""

from __future__ import annotations

import re

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
