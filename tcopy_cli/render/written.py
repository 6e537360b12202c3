"""Names as a folded turn's line and a loop's summary write them (tables): fewer names for the same tensors.

A module's tensors by the module (``model``; ``model's 65 parameters``), its tensors of one
name by that name under it (each block's ``num_batches_tracked`` as
``model.*.num_batches_tracked``, as a loop's summary names its row), and a module's tensors
under a second module's name (``b = model.blocks[9]``: ``b.0.weight``) once, by the first name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from tcopy_cli.render.modules import MODULE_ROW, member_of, module_phrases, whole_modules
from tcopy_cli.trace.records import TensorRecord


def written(names: list[str], known: dict[str, TensorRecord]) -> list[str]:
    """Whole modules by their names (``whole_modules``: ``model``); where that leaves a list,
    every parameter of a model as ``model's 65 parameters`` (``module_phrases``); else a module's
    tensors of one name together (``by_leaf``)."""
    whole = whole_modules(names, known)
    if len(whole) >= 3:
        listed = ", ".join(names[:-1]) + " and " + names[-1]
        phrased = module_phrases(listed, known)
        if phrased != listed and "," not in phrased:  # the whole list told by its modules
            return [phrased]
    return by_leaf(whole, known)


def by_leaf(names: list[str], known: Iterable[str]) -> list[str]:
    """``names``, where every tensor of one name below a module among ``known`` (the step's names)
    is written at the place of the first as a loop's summary writes them: each block's
    ``num_batches_tracked`` as ``model.*.num_batches_tracked``."""
    leaves: dict[tuple[str, str], set[str]] = {}
    for name in known:
        parts = member_of(name)
        if parts is not None and len(parts) > 2:
            leaves.setdefault((parts[0], parts[-1]), set()).add(name)
    given = set(names)
    as_leaf: dict[str, str] = {}
    for (top, leaf), members in leaves.items():
        if len(members) >= MODULE_ROW and members <= given:
            as_leaf.update(dict.fromkeys(members, f"{top}.*.{leaf}"))
    return list(dict.fromkeys(as_leaf.get(n, n) for n in names))


def module_aliases(known: Mapping[str, TensorRecord]) -> dict[str, str]:
    """Each module's tensor that is the very tensor an earlier name holds, itself a module's tensor
    (``b = model.blocks[9]``: ``b.0.weight`` is ``model.blocks.9.0.weight``), with that name."""
    first: dict[int, str] = {}
    out: dict[str, str] = {}
    for name, record in known.items():
        if not record.object_id or member_of(name) is None:
            continue
        held = first.setdefault(record.object_id, name)
        if held != name:
            out[name] = held
    return out
