"""Modules as rows: the parameters and buffers of a module in one table row while they behave alike.

A step lists every tensor of a model (``model.conv1.weight``, ``model.conv1.bias`` ...); a table
that draws each of them takes a screen for a small CNN and several for a ResNet. Where the tensors
of one module did the same thing in a step (all unchanged, all got a gradient, all updated in
place, all new), the table draws them as one row named after the module (``model`` when the whole
model did, ``model.fc2`` when only its tensors did), with what a learner looks for at a glance:
how many tensors and values, their versions and the largest ``.grad`` norm among them. A tensor
that did something else keeps its own row. The rows are a view: JSON keeps every tensor.

What opens a module again: ``--watch model.fc1`` (a watched name below a module's top is drawn as
its tensors) and ``--all-steps`` (every row). ``--depth`` is about calls, not modules: it hides
the steps inside script functions.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace

from tcopy_cli.render import ViewOptions
from tcopy_cli.render.cells import Row
from tcopy_cli.render.loops import SPARKS, Evolution
from tcopy_cli.render.memo import Memo
from tcopy_cli.render.values import tensor_norm
from tcopy_cli.trace.records import Step, TensorRecord

MODULE_ROW = 2
"""At least this many tensors that behave alike share a module row."""


def member_of(name: str) -> tuple[str, ...] | None:
    """The pieces of a module's tensor name, its top first (``model``, ``conv1``, ``weight``; a
    module in a list: ``layers[0]``, ``weight``; a function's local: ``train:net``, ``0``, ``weight``);
    None for a name that is no module's tensor (``x``, ``xs[0]``, ``d["a.b"]``, ``CNN.forward:x``)."""
    head, bracket, rest = name.partition("[")
    function, colon, local = head.rpartition(":")
    pieces: list[str] = []
    depth, start, text = 0, 0, local + bracket + rest
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch == "." and depth == 0:
            pieces.append(text[start:i])
            start = i + 1
    pieces.append(text[start:])
    if len(pieces) < 2 or not all(pieces):
        return None
    pieces[0] = function + colon + pieces[0]
    return tuple(pieces)


def behaviour(row: Row) -> tuple[object, ...]:
    """What a tensor did in a step and what it is, as far as a module row tells it: alike for every
    tensor of a module row."""
    record = row.record
    if not isinstance(record, TensorRecord):
        return ("not a tensor", id(row))
    return (row.new, row.changed, row.cells["autograd"], record.dtype, record.device, record.grad is not None)


def view_rows(rows: list[Row], view: ViewOptions, step: Step | None = None) -> list[Row]:
    """The rows a table or Markdown view draws for a step: ``module_rows`` (none with --all-steps
    or in a failing step, where the error may be about any tensor; a name --watch gives below a
    module's top opens it). A note may name a tensor of a module's
    row (``computed from model.conv1.weight``): the row stays, --watch model.conv1 opens it."""
    if not view.fold or (step is not None and step.error is not None):
        return rows
    opening = [w for w in view.watch or () if member_of(w) is not None]

    def opened(name: str) -> bool:
        return any(name == w or name.startswith((w + ".", w + "[")) for w in opening)

    return module_rows(rows, opened)


def _aliases(rows: list[Row]) -> set[int]:
    """The rows that are a row above them again under another name (the very tensor, the same
    facts changed): ``fold_aliases`` names them, so no module row takes them in."""
    first: dict[int, Row] = {}
    out: set[int] = set()
    for r in rows:
        rec = r.record
        if isinstance(rec, TensorRecord) and rec.object_id:
            o = first.setdefault(rec.object_id, r)
            if o is not r and o.new == r.new and o.changed == r.changed:
                out.add(id(r))
    return out


def module_rows(rows: list[Row], opened: Callable[[str], bool] = lambda name: False) -> list[Row]:
    """``rows``, where tensors of one module that behave alike (``behaviour``) share one row.

    ``opened(name)``: the tensor keeps its own row (``--watch`` names it or a module above it
    below the top)."""
    aliases = _aliases(rows)
    tops: dict[str, list[tuple[Row, tuple[str, ...]]]] = {}
    for row in rows:
        parts = member_of(row.cells["name"])
        if parts is not None and not opened(row.cells["name"]) and id(row) not in aliases:
            tops.setdefault(parts[0], []).append((row, parts))
    merged: dict[int, Row] = {}  # id of a group's first row -> the group's row
    gone: set[int] = set()
    for members in tops.values():
        groups: dict[tuple[object, ...], list[tuple[Row, tuple[str, ...]]]] = {}
        for row, parts in members:
            groups.setdefault(behaviour(row), []).append((row, parts))
        for group in groups.values():
            if len(group) < MODULE_ROW:
                continue
            merged[id(group[0][0])] = _group_row(group, members)
            gone.update(id(row) for row, _ in group[1:])
    return [merged.get(id(r), r) for r in rows if id(r) not in gone]


def _group_row(group: list[tuple[Row, tuple[str, ...]]], members: list[tuple[Row, tuple[str, ...]]]) -> Row:
    """The row of tensors that behave alike, named after the module that holds them."""
    rows = [row for row, _ in group]
    paths = [parts for _, parts in group]
    prefix: list[str] = []
    for pieces in zip(*(p[:-1] for p in paths)):
        if len(set(pieces)) > 1:
            break
        prefix.append(pieces[0])
    under = [row for row, parts in members if tuple(parts[: len(prefix)]) == tuple(prefix)]
    name = ".".join(prefix)
    if len(under) > len(rows):  # others under that module did something else: which ones these are
        depth = len(prefix)
        children = list(dict.fromkeys(p[depth] for p in paths))
        whole = all(
            sum(1 for _, parts in members if parts[: depth + 1] == (*prefix, child))
            == sum(1 for p in paths if p[depth] == child)
            for child in children
        )
        if whole and all(len(p) > depth + 1 for p in paths):  # whole modules below it: model.{conv2,fc1}
            name += "." + "{" + ",".join(children) + "}"
        else:
            leaves = sorted({p[-1] for p in paths})
            name += ".*." + (leaves[0] if len(leaves) == 1 else "{" + ",".join(leaves) + "}")
    return group_row(name, rows)


def group_row(name: str, rows: Sequence[Row]) -> Row:
    """One row for ``rows`` (tensors that behave alike), named ``name``."""
    records = [r.record for r in rows if isinstance(r.record, TensorRecord)]
    first = rows[0]
    count = sum(math.prod(r.shape) for r in records)
    grads = [tensor_norm(r.grad) for r in records if r.grad is not None]
    needs = all(r.requires_grad for r in records)
    cells = dict(first.cells)
    cells.update(
        name=name,
        values=f"{len(rows)} tensors, {count:,} {'params' if needs else 'values'}",
        shape="-",
        data_ptr="-",
        shares="-",
        storage=_span([r.storage for r in records]),
        grad=_grad_text(grads) if grads else "-",
        version=_versions(records),
    )
    same = {k for k in ("grad_fn", "requires_grad", "is_leaf") if len({r.cells[k] for r in rows}) == 1}
    for key in ("grad_fn", "requires_grad", "is_leaf"):
        if key not in same:
            cells[key] = "…"
    facts: dict[str, object] = {
        "members": tuple((r.cells["name"], tuple(sorted(r.cells.items())), _frozen(r.facts)) for r in rows),
        "storages": frozenset(r.storage for r in records),
        "seen": tuple((r.cells["name"], (r.cells, r.facts)) for r in rows),  # as ``folding.seen_key`` holds them
        "objects": tuple((r.record.object_id, r.cells["name"]) for r in rows if isinstance(r.record, TensorRecord)),
    }
    return replace(first, cells=cells, record=None, facts=facts, members=tuple(r.cells["name"] for r in rows))


def _frozen(facts: dict[str, object]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, repr(v)) for k, v in facts.items()))


_LABEL = re.compile(r"([A-Z]+)(\d+)")


def _span(labels: Iterable[str]) -> str:
    """``S3–10`` for storages S3 to S10 (in any order, none missing), else ``8 storages``."""
    found = list(dict.fromkeys(labels))
    matched = [_LABEL.fullmatch(label) for label in found]
    if all(m is not None for m in matched) and len({m[1] for m in matched if m}) == 1:
        numbers = sorted(int(m[2]) for m in matched if m)
        if numbers == list(range(numbers[0], numbers[-1] + 1)):
            kind = matched[0][1] if matched[0] else ""
            return f"{kind}{numbers[0]}" if len(numbers) == 1 else f"{kind}{numbers[0]}–{numbers[-1]}"
    return f"{len(found)} storages"


def _versions(records: list[TensorRecord]) -> str:
    """``V3–10:2``: the version counters and the version they are at (``1–3`` where they differ)."""
    counters = _span(r.version_counter for r in records if r.version_counter and r.version_counter != "-")
    versions = sorted({r.version for r in records})
    at = str(versions[0]) if len(versions) == 1 else f"{versions[0]}–{versions[-1]}"
    return f"{counters}:{at}" if not counters.endswith("storages") else at


def _grad_text(norms: list[float | None]) -> str:
    """``‖g‖≤1.57``: the largest norm of the gradients (``nan`` wins: it is what to see)."""
    known = [n for n in norms if n is not None]
    if not known:
        return f"{len(norms)} grads"
    if any(math.isnan(n) for n in known):
        return "‖g‖ nan"
    return f"‖g‖≤{max(known):.3g}"


_MORE = re.compile(r" and (\d[\d,]*) more\b")
_RUNS: Memo[re.Pattern[str]] = Memo(64)


def _run_pattern(listed: tuple[str, ...]) -> re.Pattern[str]:
    """A list of names among ``listed`` (each alone, ``.grad`` after it or not): ``a, b and c``."""
    alone = "|".join(re.escape(n) for n in listed)
    item = rf"(?<![\w.\[\]\"'])(?:{alone})(?:\.grad)?(?![\w\[]|\.\w)"
    return re.compile(rf"{item}(?:(?:, | and ){item})+(?: and \d[\d,]* more\b)?")


def module_phrases(text: str, names: Iterable[str] | Mapping[str, object]) -> str:
    """``text`` (a note), where a list of every tensor of a module (``model.conv1.weight,
    model.conv1.bias, ... and model.fc2.bias``, or ``..., model.conv2.bias and 4 more``; each
    name with ``.grad`` after it, or none) reads ``model's 8 tensors`` (``the .grad of model's 8
    tensors``). ``names``: the step's tensors (a mapping to their records tells which require
    grad: a list of every parameter of a model that also holds buffers reads ``model's 65
    parameters``; of all but one module's, ``model's 59 parameters outside model.blocks.9``;
    lists that cover several tops, ``model's 65 parameters and b's 6 parameters``)."""
    tops: dict[str, set[str]] = {}
    grads: dict[str, set[str]] = {}  # top -> its tensors that require grad (its parameters)
    for name in names:
        parts = member_of(name)
        if parts is not None:
            tops.setdefault(parts[0], set()).add(name)
            record = names[name] if isinstance(names, Mapping) else None
            if isinstance(record, TensorRecord) and record.requires_grad and record.is_leaf:
                grads.setdefault(parts[0], set()).add(name)
    if not tops:
        return text
    listed = tuple(sorted({n for members in tops.values() for n in members}, key=len, reverse=True))
    run = _RUNS.get(listed, _run_pattern, listed)

    def phrase(m: re.Match[str]) -> str:
        words = m[0]
        more = _MORE.search(words)
        extra = int(more[1].replace(",", "")) if more is not None and more.end() == len(words) else 0
        body = words[: more.start()] if more is not None and extra else words
        items = re.split(r", | and ", body)
        with_grad = [i.endswith(".grad") for i in items]
        if len(items) + extra < 3 or (any(with_grad) and not all(with_grad)):
            return words
        named = [i.removesuffix(".grad") for i in items]
        found = set(named)
        for top, members in tops.items():
            if found <= members and len(found) + extra == len(members):
                what = f"{top}'s {len(members)} tensors"
            elif found <= members and not extra and (parts := _whole_parts(named, members)):
                what = f"{top}.{{{','.join(parts)}}}'s {len(found)} tensors"
            else:
                continue
            return f"the .grad of {what}" if all(with_grad) else what
        if not extra and (whats := _parameter_phrases(named, tops, grads)):
            what = ", ".join(whats[:-1]) + " and " + whats[-1] if len(whats) > 1 else whats[0]
            return f"the .grad of {what}" if all(with_grad) else what
        return words

    return run.sub(phrase, text)


def _parameter_phrases(named: list[str], tops: dict[str, set[str]], grads: dict[str, set[str]]) -> list[str]:
    """``named`` told top by top, in the order first named, as whole tops (``b's 6 tensors``),
    every parameter of a top that holds buffers too (``model's 65 parameters``), or all but one
    module's (``model's 59 parameters outside model.blocks.9``); [] where a top's names are
    none of these or only one top is named whole (the caller's plain forms)."""
    by_top: dict[str, set[str]] = {}
    for name in named:
        parts = member_of(name)
        if parts is None:
            return []
        by_top.setdefault(parts[0], set()).add(name)
    out: list[str] = []
    told = False  # a top told as its parts, not as names
    for top, found in by_top.items():
        members, params = tops.get(top, set()), grads.get(top, set())
        if len(found) < 3:  # fc1.weight and fc1.bias: as named
            out += [n for n in named if n in found]
            continue
        told = True
        if found == members:
            out.append(f"{top}'s {len(found)} tensors")
        elif found == params:
            out.append(f"{top}'s {len(found)} parameters")
        elif found < params and (outside := _one_module(params - found, params)):
            out.append(f"{top}'s {len(found)} parameters outside {outside}")
        elif found < params and len(found) > 1 and (inside := _one_module(found, params)):
            out.append(f"{inside}'s {len(found)} parameters")
        else:
            return []
    return out if told else []


def _one_module(missing: set[str], params: set[str]) -> str | None:
    """The module (``model.blocks.9``) whose parameters are exactly ``missing``, or None."""
    paths = [member_of(n) for n in missing]
    if any(p is None for p in paths):
        return None
    prefix = _shared_owner([p for p in paths if p is not None])
    if len(prefix) < 2:
        return None
    inside = {n for n in params if (p := member_of(n)) is not None and list(p[: len(prefix)]) == prefix}
    return ".".join(prefix) if inside == missing else None


def _shared_owner(paths: Sequence[tuple[str, ...]]) -> list[str]:
    """The module path every one of ``paths`` (``member_of``'s pieces) lies under, as pieces:
    ``model.blocks.9`` for ``model.blocks.9.1.weight`` and ``model.blocks.9.3.weight``."""
    prefix: list[str] = []
    for pieces in zip(*(p[:-1] for p in paths)):
        if len(set(pieces)) > 1:
            break
        prefix.append(pieces[0])
    return prefix


def _whole_parts(found: list[str], members: set[str]) -> list[str]:
    """The parts of a module (``conv1``, ``layer1.0``) of which the names ``found`` hold every
    tensor and nothing else, in the order named ([] unless there are two or more)."""
    parts: dict[str, set[str]] = {}
    for name in members:
        path = member_of(name)
        if path is not None and len(path) > 2:
            parts.setdefault(".".join(path[1:-1]), set()).add(name)
    named = [".".join(path[1:-1]) for n in found if (path := member_of(n)) is not None and len(path) > 2]
    whole = list(dict.fromkeys(named))
    if len(whole) < 2 or len(named) != len(found) or set().union(*(parts[p] for p in whole)) != set(found):
        return []
    return whole


def module_evolutions(rows: list[tuple[str, Evolution]], view: ViewOptions) -> list[tuple[str, Evolution, int]]:
    """The rows of a loop's summary, where the tensors of a module that evolved alike (from one
    version to another, a gradient or none, no storage made) share one row named after the
    module: (name, evolution, how many tensors it stands for). Its ``.grad`` norms are, turn by
    turn, the largest of theirs. Not with --all-steps; a name --watch gives below a top opens it."""
    if not view.fold:
        return [(name, ev, 1) for name, ev in rows]
    opening = [w for w in view.watch or () if member_of(w) is not None]
    groups: dict[tuple[object, ...], list[tuple[str, Evolution]]] = {}
    order: list[tuple[object, ...]] = []
    for name, ev in rows:
        parts = member_of(name)
        alike = (
            parts is not None
            and not ev.items
            and not any(name == w or name.startswith((w + ".", w + "[")) for w in opening)
        )
        if parts is not None and alike and ev.scalar:  # model.blocks.*.num_batches_tracked
            key: tuple[object, ...] = ("scalar", parts[0], parts[-1], ev.version_before is None)
        elif parts is not None and alike:
            key = (
                parts[0],
                ev.version_before,
                ev.versions[-1] if ev.versions else None,
                any(n is not None for n in ev.grad_norms),
                any(n is not None for n in ev.peak_norms),
                ev.storages_made,
                ev.storages_new,
                ev.storages_freed,
            )
        else:
            key = ("alone", name)
        if key not in groups:
            order.append(key)
        groups.setdefault(key, []).append((name, ev))
    out: list[tuple[str, Evolution, int]] = []
    named: dict[int, list[tuple[str, ...]]] = {}  # a module's row (its place in out) -> its tensors' names
    for key in order:
        group = groups[key]
        if len(group) < MODULE_ROW:
            out += [(name, ev, 1) for name, ev in group]
            continue
        evs = [ev for _, ev in group]
        paths = [member_of(name) or (name,) for name, _ in group]
        prefix = _shared_owner(paths)
        if key[0] == "scalar":
            out.append((_scalar_name(prefix, paths), _scalars(evs), len(group)))
            continue
        merged = Evolution(
            version_before=evs[0].version_before,
            versions=list(evs[0].versions),
            grad_norms=_largest([ev.grad_norms for ev in evs]),
            peak_norms=_largest([ev.peak_norms for ev in evs]),
            storages=list(evs[0].storages),
            storage_before=evs[0].storage_before,
            storages_freed=evs[0].storages_freed,
            storages_new=evs[0].storages_new,
        )
        out.append((".".join(prefix), merged, len(group)))
        named[len(out) - 1] = paths
    clash = [name for name, _, _ in out]
    for at, paths in named.items():  # two rows of one module (its parameters, its buffers): by their names
        name, ev, count = out[at]
        if clash.count(name) > 1:
            leaves = sorted({p[-1] for p in paths})
            out[at] = (name + ".*." + (leaves[0] if len(leaves) == 1 else "{" + ",".join(leaves) + "}"), ev, count)
    return out


def _scalar_name(prefix: list[str], paths: list[tuple[str, ...]]) -> str:
    """``model.blocks.*.num_batches_tracked``: the module above one-element tensors of one name."""
    leaf = paths[0][-1]
    if all(len(p) == len(prefix) + 1 for p in paths):
        return ".".join([*prefix, leaf])
    return ".".join([*prefix, "*", leaf])


def _scalars(evs: list[Evolution]) -> Evolution:
    """One row for one-element tensors of one name: their values where every one went the same
    way; else how many went from which first value to which last (``ends``)."""
    first = evs[0]
    if all(ev.values == first.values for ev in evs):
        return replace(first, storages=[], storages_new=0, storages_freed=0, storage_before=None)
    ends: dict[tuple[float, float], int] = {}
    for ev in evs:
        ends[ev.values[0], ev.values[-1]] = ends.get((ev.values[0], ev.values[-1]), 0) + 1
    return Evolution(versions=list(first.versions), ends=tuple((a, b, n) for (a, b), n in ends.items()))


def _largest(series: list[list[float | None]]) -> list[float | None]:
    """Turn by turn, the largest of the values (NaN wins; None where none has one)."""
    out: list[float | None] = []
    for turn in zip(*series):
        known = [n for n in turn if n is not None]
        out.append(None if not known else (math.nan if any(math.isnan(n) for n in known) else max(known)))
    return out


def module_parts(parts: list[str], count: int) -> list[str]:
    """``evolution_parts`` of a module's row: how many tensors, and its norms are the largest of theirs."""
    if count < 2:
        return parts
    each = [("largest " + p) if p.startswith("grad norm") else ("each " + p) if "storage" in p else p for p in parts]
    if parts and parts[0][:1] in SPARKS:  # one-element tensors that went the same way: a sparkline
        return [f"{count} tensors, each {each[0]}", *each[1:]]
    return [f"{count} tensors", *each]


def whole_modules(names: list[str], known: Iterable[str]) -> list[str]:
    """``names``, where every tensor of a module among ``known`` (the step's names) is written as the
    module, at the place of the first (``model`` for all of ``model.conv1.weight`` ...), from the top
    down (``model.fc2`` where only its tensors are there)."""
    tops: dict[tuple[str, ...], set[str]] = {}
    for name in known:
        parts = member_of(name) or ()
        for k in range(1, len(parts)):
            tops.setdefault(parts[:k], set()).add(name)
    if not tops:
        return names
    given = set(names)
    whole: dict[str, str] = {}  # tensor -> the module written for it
    for prefix in sorted(tops, key=len):
        members = tops[prefix]
        if len(members) >= MODULE_ROW and members <= given and not members & whole.keys():
            whole.update(dict.fromkeys(members, ".".join(prefix)))
    return list(dict.fromkeys(whole.get(n, n) for n in names))
