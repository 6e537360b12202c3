"""What a loop did, summarised when it ends: turns run, and how each named tensor evolved.

``LoopTracker`` reads steps as they arrive (their ``loops`` say which turn of which loop
each belongs to) and hands back a ``LoopSummary`` for every loop that has ended. It reads
records only: scalars are a tensor's listed value, a ``.grad`` norm is computed from the
listed gradient values (of a large gradient, from its mean and spread measured on its device).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tcopy_cli.render import plural
from tcopy_cli.render.names import item_runs, run_name, unlisted_change, unlisted_pairs
from tcopy_cli.render.values import tensor_norm
from tcopy_cli.trace.records import LoopContext, RunSummary, Step, TensorRecord
from tcopy_cli.trace.scriptnames import is_local
from tcopy_cli.trace.values import code_span

if TYPE_CHECKING:
    from rich.table import Table
    from rich.text import Text

SPARKS = "▁▂▃▄▅▆▇█"


def sparkline(values: Sequence[float], width: int | None = None) -> str:
    """One block character per value, low to high (``▁``..``█``); a blank for NaN.

    More values than ``width`` are sampled at evenly spaced turns (the first and last kept).
    """
    if width is not None and 1 < width < len(values):
        n = len(values)
        values = [values[round(i * (n - 1) / (width - 1))] for i in range(width)]
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return " " * len(values)
    lo, hi = min(finite), max(finite)
    span = hi - lo
    out = []
    for v in values:
        if not math.isfinite(v):
            out.append(" ")
        elif span == 0:
            out.append(SPARKS[len(SPARKS) // 2])
        else:
            out.append(SPARKS[round((v - lo) / span * (len(SPARKS) - 1))])
    return "".join(out)


def scalar_of(record: TensorRecord) -> float | None:
    """The value of a one-element tensor (None for larger ones or unlisted values)."""
    if math.prod(record.shape) != 1 or record.values is None:
        return None
    value: Any = record.values
    while isinstance(value, list) and len(value) == 1:
        value = value[0]
    if isinstance(value, (bool, int, float)):
        return float(value)
    if value in ("nan", "inf", "-inf"):
        return float(value)
    return None  # complex numbers and the like


def _flat(values: Any) -> list[float] | None:
    out: list[float] = []
    stack = [values]
    while stack:
        v = stack.pop()
        if isinstance(v, list):
            stack.extend(v)
        elif isinstance(v, (int, float)) or v in ("nan", "inf", "-inf"):
            out.append(float(v))
        else:
            return None
    return out


def grad_norm(record: TensorRecord) -> float | None:
    """The 2-norm of a tensor's ``.grad``, from its listed values or, for a large gradient, from the
    mean and spread measured on its device (None when there is no grad, or nothing to tell it from)."""
    grad = record.grad
    if grad is None:
        return None
    if grad.values is None:
        return tensor_norm(grad)
    flat = _flat(grad.values)
    return None if flat is None else math.sqrt(sum(x * x for x in flat))


@dataclass
class Evolution:
    """How one named tensor changed over a loop's turns (one entry per turn, at its end)."""

    values: list[float] = field(default_factory=list)
    """The value at the end of each turn, for a one-element tensor; empty otherwise."""
    version_before: int | None = None
    """The version counter before the loop (None: the name was bound inside it)."""
    versions: list[int] = field(default_factory=list)
    grad_norms: list[float | None] = field(default_factory=list)
    peak_norms: list[float | None] = field(default_factory=list)
    """The largest ``.grad`` norm among each turn's steps (None: no listed ``.grad`` in the turn):
    what a turn that resets the gradient before it ends (``w.grad.zero_()``, ``w.grad = None``)
    had after its backward."""
    storages: list[str] = field(default_factory=list)
    """Storage labels the name held, in order of first appearance (the one before the loop first)."""
    storage_before: str | None = None
    storages_freed: int = 0
    storages_new: int = 0
    """Of ``storages``, how many first appeared inside the loop (their storage label is newer than
    every label seen before it); the others were made before it (``for x in xs`` holds xs's)."""
    ends: tuple[tuple[float, float, int], ...] = ()
    """For a module's row of one-element tensors that did not all go the same way
    (``modules.module_evolutions``): (first value, last value, how many tensors), in order."""
    items: int = 0
    """For a row of several list items (``summary_rows``): how many; their values (one each) in ``values``."""

    @property
    def scalar(self) -> bool:
        """Whether every turn left a one-element tensor with a listed value."""
        return bool(self.values) and len(self.values) == len(self.versions)

    @property
    def storages_made(self) -> int:
        """Storages the name got inside the loop."""
        return sum(1 for s in self.storages if s != self.storage_before)


def _listed(names: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


LOOP_FINDINGS = frozenset({"grad.not-reset"})
"""Kinds of step notes a loop summary gathers over its turns (``explain.resets``)."""


@dataclass
class LoopFinding:
    """What notes of one kind found in several turns of a loop: the tensors, the turns, the fix."""

    kind: str
    severity: str
    tensors: list[str] = field(default_factory=list)
    turns: list[int] = field(default_factory=list)
    fix: str | None = None
    line: int = 0
    """The line of the statement whose step carried the note (where the fix goes before)."""

    def text(self, iterations: int) -> str:
        """The finding in words (the table, Markdown and JSON say the same)."""
        grads = _listed([n + ".grad" for n in self.tensors])
        turns = self.turns
        # Said from what was measured: each backward added into what an earlier turn left (not that the
        # gradients grew: a sum of gradients of opposite signs shrinks).
        if turns == list(range(turns[0], iterations + 1)):
            when = f"from turn {turns[0]} on" + (f" (turns {turns[0]}–{turns[-1]})" if len(turns) > 1 else "")
            used = "so each update used the sum of every turn's gradient so far"
        else:
            when = f"in turns {', '.join(map(str, turns))}"
            used = "so those updates used a sum of several turns' gradients"
        fix = f" Add {code_span(self.fix)} in the loop before the backward at line {self.line}." if self.fix else ""
        return (
            f"{grads} never reset in the loop: {when}, each backward added its gradient to what the turns "
            f"before had left in {'it' if len(self.tensors) == 1 else 'them'}, {used}.{fix}"
        )


@dataclass
class LoopSummary:
    """One run of a loop, once it ended."""

    line: int
    entry: int
    total: int | None
    enclosing: tuple[LoopContext, ...]
    """The loops around this one (their turn when this one ran), outermost first."""
    first_step: int
    last_step: int = 0
    iterations: int = 0
    tensors: dict[str, Evolution] = field(default_factory=dict)
    unlisted_before: dict[str, int] = field(default_factory=dict)
    """``Step.unlisted`` of the step before the loop."""
    unlisted_after: dict[str, int] = field(default_factory=dict)
    """``Step.unlisted`` at the end of the last turn."""
    labels_before: int = 0
    """The number of the newest storage label (``S12``: 12) seen before the loop's first step."""
    findings: dict[str, LoopFinding] = field(default_factory=dict)
    """Notes of ``LOOP_FINDINGS`` kinds its turns' steps carried (a loop's own steps, not a nested loop's), by kind."""

    @property
    def level(self) -> int:
        """How many loops are around this one."""
        return len(self.enclosing)

    def changed(self) -> dict[str, Evolution]:
        """The names whose tensor changed during the loop (value, version, grad or storage)."""
        out = {}
        for name, ev in self.tensors.items():
            if not ev.versions:  # unbound inside the loop
                continue
            moved = (
                ev.version_before is None
                or len(set(ev.versions)) > 1
                or ev.versions[-1] != ev.version_before
                or len(set(ev.values)) > 1
                or len(set(ev.grad_norms)) > 1
                or len(set(ev.peak_norms)) > 1
                or any(p is not None and p != n for p, n in zip(ev.peak_norms, ev.grad_norms))
                or ev.storages_made > 0
            )
            if moved:
                out[name] = ev
        return out

    def gather(self, step: Step, turn: int) -> None:
        """Take in the notes of ``LOOP_FINDINGS`` kinds of one of its steps (in turn ``turn``)."""
        for n in step.explanations:
            if n.kind not in LOOP_FINDINGS:
                continue
            found = self.findings.setdefault(n.kind, LoopFinding(n.kind, n.severity))
            found.tensors += [t for t in n.tensors if t not in found.tensors]
            if turn not in found.turns:
                found.turns.append(turn)
            found.fix, found.line = n.fix or found.fix, step.line

    @property
    def unlisted(self) -> dict[str, tuple[int, int]]:
        """Long lists whose count of items not listed changed in the loop: (before, after)."""
        return unlisted_pairs(self.unlisted_before, self.unlisted_after)


def unlisted_rows(unlisted: dict[str, tuple[int, int]]) -> list[tuple[str, str]]:
    """(container, words) for each long list of ``LoopSummary.unlisted``."""
    return [(name, unlisted_change(after - before)) for name, (before, after) in unlisted.items()]


@dataclass
class _Running:
    summary: LoopSummary
    turn: int
    last: Step | None = None
    """The last step of the turn being run (sampled when the turn ends)."""
    peaks: dict[str, float] = field(default_factory=dict)
    """The largest ``.grad`` norm of each name in the turn's steps so far."""


_MAX_WAITING = 10_000
"""Generators' loops kept waiting at once (the one waiting longest ends first)."""


class LoopTracker:
    """Follows the loops of a run step by step; reports each loop when it ends."""

    def __init__(self) -> None:
        self.running: list[_Running] = []
        self.waiting: dict[int, _Running] = {}
        """Loops of generators waiting at a ``yield`` (``LoopContext.suspends``), by entry: left, not
        ended. One goes on when a step is in it again, and ends where a step says it ended
        (``Step.loops_ended``: the generator left it, was done, or was dropped) or the run ends."""
        self.previous: Step | None = None
        self.norms: dict[str, tuple[TensorRecord, float | None]] = {}
        """The last ``.grad`` record of each name and its norm (records that did not change come again)."""
        self.newest_label = 0
        """The number of the newest storage label in the steps fed so far (labels count up)."""

    def feed(self, step: Step) -> list[LoopSummary]:
        """Loops that ended before ``step`` (innermost first); then ``step`` is taken in."""
        entries = [loop.entry for loop in step.loops]
        ended: list[LoopSummary] = []
        keep = 0
        while keep < len(self.running) and keep < len(entries) and self.running[keep].summary.entry == entries[keep]:
            keep += 1
        while len(self.running) > keep:
            running = self.running.pop()
            last = running.last.loops if running.last is not None else ()
            if any(c.suspends and c.entry == running.summary.entry for c in last):
                self.waiting[running.summary.entry] = running
                if len(self.waiting) > _MAX_WAITING:
                    ended.append(self._end(self.waiting.pop(next(iter(self.waiting)))))
            else:
                ended.append(self._end(running))
        for entry in step.loops_ended:
            if entry in self.waiting:
                ended.append(self._end(self.waiting.pop(entry)))
        _told(ended, step.loops_ended, step.loops_ended_turns)
        norms = self._grad_norms(step) if step.loops else {}
        for level, loop in enumerate(step.loops):
            if level >= len(self.running) and loop.entry in self.waiting:
                self.running.append(self.waiting.pop(loop.entry))
            if level >= len(self.running):
                summary = LoopSummary(loop.line, loop.entry, loop.total, step.loops[:level], step.index)
                summary.labels_before = self.newest_label
                self._before(summary, self.previous)
                self.running.append(_Running(summary, loop.iteration))
            running = self.running[level]
            if loop.iteration != running.turn and running.last is not None:
                self._sample(running.summary, running.last, running.peaks)
                running.turn, running.peaks = loop.iteration, {}
            peaks = running.peaks
            for name, norm in norms.items():
                was = peaks.get(name)
                if was is None or norm > was or math.isnan(norm):  # a NaN gradient stays told
                    peaks[name] = norm
            if level == len(step.loops) - 1:
                running.summary.gather(step, loop.iteration)
            running.last = step
            running.summary.last_step = step.index
            running.summary.iterations = max(running.summary.iterations, loop.iteration)
        self.previous = step
        self.newest_label = max([self.newest_label, *(_label_number(r.storage) for r in step.tensors.values())])
        return ended

    def close(self, run: RunSummary | None = None) -> list[LoopSummary]:
        """The loops still running when the run ended (innermost first), and those waiting;
        ``run``: how it ended (the turns the loops that ended after the last step ran)."""
        ended = []
        while self.running:
            ended.append(self._end(self.running.pop()))
        while self.waiting:
            ended.append(self._end(self.waiting.pop(next(reversed(self.waiting)))))
        entries, turns = (run.loops_ended, run.loops_ended_turns) if run is not None else ([], [])
        _told(ended, entries, turns)
        return ended

    def _grad_norms(self, step: Step) -> dict[str, float]:
        """The norm of each listed ``.grad`` of ``step``'s tensors (not a running function's locals)."""
        out: dict[str, float] = {}
        known = self.norms
        for name, r in step.tensors.items():
            grad = r.grad
            if grad is None or is_local(name):
                continue
            last = known.get(name)
            if last is None or last[0] is not grad:
                last = known[name] = (grad, grad_norm(r))
            if last[1] is not None:
                out[name] = last[1]
        return out

    def _end(self, running: _Running) -> LoopSummary:
        summary = running.summary
        if running.last is not None:
            self._sample(summary, running.last, running.peaks)
        alive = {r.storage for r in running.last.tensors.values()} if running.last is not None else set()
        for ev in summary.tensors.values():
            ev.storages_freed = sum(1 for s in dict.fromkeys([ev.storage_before, *ev.storages]) if s and s not in alive)
            ev.storages_new = sum(1 for s in ev.storages if _label_number(s) > summary.labels_before)
        return summary

    @staticmethod
    def _before(summary: LoopSummary, step: Step | None) -> None:
        if step is None:
            return
        summary.unlisted_before = step.unlisted
        for name, r in step.tensors.items():
            if not is_local(name):
                summary.tensors[name] = Evolution(version_before=r.version, storage_before=r.storage)

    @staticmethod
    def _sample(summary: LoopSummary, step: Step, peaks: dict[str, float]) -> None:
        """The state at the end of a turn: one entry per named tensor (``peaks``: the largest
        ``.grad`` norms in the turn)."""
        summary.unlisted_after = step.unlisted
        for name, r in step.tensors.items():
            if is_local(name):  # a running function's locals come and go with each call
                continue
            ev = summary.tensors.get(name)
            if ev is None:
                ev = summary.tensors[name] = Evolution()
            value = scalar_of(r)
            if value is not None:
                ev.values.append(value)
            ev.versions.append(r.version)
            ev.grad_norms.append(grad_norm(r))
            ev.peak_norms.append(peaks.get(name))
            if r.storage not in ev.storages and r.storage != ev.storage_before:
                ev.storages.append(r.storage)


def _told(ended: list[LoopSummary], entries: list[int], turns: list[int]) -> None:
    """``ended`` with the turns the engine told for them (``Step.loops_ended``: a last turn that ran
    no step, ``if i == 2: break``, counts too), innermost first (the generators' loops among them)."""
    told = dict(zip(entries, turns))
    for summary in ended:
        summary.iterations = max(summary.iterations, told.get(summary.entry, 0))
    ended.sort(key=lambda summary: -summary.level)


def _label_number(label: str) -> int:
    """``S12`` -> 12 (0 for a label of another kind: a grad's ``G3``, no storage). A grad never
    gets a new ``S`` label (only that of a storage known already), so tensors' labels suffice."""
    return int(label[1:]) if label[:1] == "S" and label[1:].isdigit() else 0


def number(v: float) -> str:
    """A value in a summary: four significant digits."""
    return f"{v:.4g}"


def evolution_parts(ev: Evolution, spark_width: int) -> list[str]:
    """How one tensor evolved, in words (a sparkline first for a one-element tensor)."""
    parts: list[str] = []
    if ev.ends:
        return [", ".join(f"{number(a)} → {number(b)} ({n})" for a, b, n in ev.ends)]
    if ev.scalar:
        finite = [v for v in ev.values if math.isfinite(v)]
        span = f"{number(ev.values[0])} → {number(ev.values[-1])}"
        if finite:
            span += f" (min {number(min(finite))}, max {number(max(finite))})"
        parts += [sparkline(ev.values, spark_width), span]
    else:
        first = ev.version_before if ev.version_before is not None else ev.versions[0]
        if ev.versions[-1] != first:
            parts.append(f"version {first} → {ev.versions[-1]}")
        norms = [n for n in ev.grad_norms if n is not None]
        peaks = [n for n in ev.peak_norms if n is not None]
        if not any(norms) and any(peaks):  # every turn ended with a zero gradient or none
            span = f"{number(peaks[0])} → {number(peaks[-1])}"
            ends = "zero" if len(norms) == len(ev.grad_norms) else "no .grad" if not norms else "zero or no .grad"
            parts.append(f"largest grad norm in a turn {span} ({ends} at each turn's end)")
        elif norms:
            parts.append(f"grad norm {number(norms[0])} → {number(norms[-1])}")
    made, freed = ev.storages_made, ev.storages_freed
    if ev.items:
        parts.append(
            f"{ev.items} added" if ev.scalar else f"{ev.items} added, in {plural(len(ev.storages), 'storage')}"
        )
    elif (made or freed) and not ev.scalar:
        new, earlier = ev.storages_new, made - ev.storages_new
        held = [f"{plural(new, 'storage')} made"] if new or not earlier else []
        held += [f"held {plural(earlier, 'storage')} made before the loop"] if earlier else []
        parts.append(f"{', '.join(held)}, {freed} freed")
    return parts


def summary_rows(changed: dict[str, Evolution]) -> list[tuple[str, Evolution]]:
    """The rows of a loop summary: ``changed``, where consecutive items of one list that the loop
    added and then left alone (``losses.append(loss)`` in every turn) share one row,
    ``losses[0…49]``, at the place of the first; the row's values are the items' values in
    order (for one-element items: the loss curve)."""
    left = [name for name, ev in changed.items() if _added_and_left(ev)]
    runs = item_runs(left, lambda a, b: changed[a].versions[-1] == changed[b].versions[-1])
    first = {run[0]: run for run in runs}
    rest = {name for run in runs for name in run[1:]}
    rows: list[tuple[str, Evolution]] = []
    for name, ev in changed.items():
        run = first.get(name)
        if run is not None:
            rows.append((run_name(run), _items_row([changed[n] for n in run])))
        elif name not in rest:
            rows.append((name, ev))
    return rows


def _items_row(evs: list[Evolution]) -> Evolution:
    """One row for items a loop added and left alone: their values (one each), versions and storages."""
    return Evolution(
        values=[ev.values[0] for ev in evs] if all(ev.scalar for ev in evs) else [],
        versions=[ev.versions[-1] for ev in evs],
        grad_norms=[None] * len(evs),
        storages=list(dict.fromkeys(s for ev in evs for s in ev.storages)),
        items=len(evs),
    )


def _added_and_left(ev: Evolution) -> bool:
    """Bound inside the loop, in one storage, then unchanged in every later turn (no grad)."""
    return (
        ev.version_before is None
        and len(set(ev.versions)) == 1
        and len(set(ev.values)) <= 1
        and all(n is None for n in ev.grad_norms)
        and ev.storages_made == 1
        and ev.storages_freed == 0
    )


def loop_heading(summary: LoopSummary) -> str:
    """``loop at line 19: 50 iterations (steps 10–358)``."""
    turns = plural(summary.iterations, "iteration")
    if summary.total is not None and summary.total != summary.iterations:
        turns += f" of {summary.total}"
    return f"loop at line {summary.line}: {turns} (steps {summary.first_step}–{summary.last_step})"


def hanging(lead: Text, body: Text) -> Table:
    """A row of a loop's summary: ``lead`` (its indent and name, or ``⚠``), then ``body``, whose
    lines, where it wraps, start under its first (not at the line's start)."""
    from rich.table import Table

    row = Table.grid()
    row.add_column(no_wrap=True)
    row.add_column()
    row.add_row(lead, body)
    return row
