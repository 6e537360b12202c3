"""Which steps a table or Markdown view shows in full, which it folds, and what --watch hides.

Steps arrive one at a time. The first turn of a loop is shown in full; each later turn is
held back until it ends and then shown as one compact line (``FoldedTurn``), unless
something new happened in it (an error, a warning, a new name, a note of a kind not seen
before or one about wrong gradients, a shape, dtype or device not seen before for a
name): then it is shown in full, with the loops inside it folded the same way. Loops
nested in loops, and the steps of script functions called in a loop, fold with the turn
they belong to. When a loop ends, its ``LoopSummary`` follows.

``StepFlow`` turns each arriving step into the events a renderer draws; JSON takes every
step and the loop summaries, nothing folded.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Union

from tcopy_cli.render import ViewOptions
from tcopy_cli.render.loops import LoopSummary, LoopTracker, number, scalar_of
from tcopy_cli.trace.records import LoopContext, Step, TensorRecord

ALWAYS_NEW = ("saved.", "grad.corrupted", "change.untracked-write", "error.")
"""Note kinds that show a turn in full every time (wrong gradients, version errors, caught errors)."""


@dataclass(frozen=True)
class Show:
    """Draw a step in full (``shown``), or only take it in for change marks."""

    step: Step
    shown: bool = True


@dataclass(frozen=True)
class FoldedTurn:
    """One later turn of a loop, in one line."""

    loops: tuple[LoopContext, ...]
    """The loops down to the folded one, outermost first."""
    first_step: int
    last_step: int
    lines: list[int]
    """Script lines that ran, in order of first run."""
    scalars: list[tuple[str, float | None, float]]
    """One-element tensors whose value changed: (name, before or None if new, after)."""
    versions: list[str]
    """Tensors whose version counter moved (one-element tensors are in ``scalars`` instead)."""
    grads: list[str]
    """Tensors whose ``.grad`` changed (both: shown as ``updated``)."""
    printed: str = ""

    @property
    def steps(self) -> int:
        """How many steps the turn ran."""
        return self.last_step - self.first_step + 1


@dataclass(frozen=True)
class LoopEnd:
    """A loop ended: its summary."""

    summary: LoopSummary
    shown: bool = True


Event = Union[Show, FoldedTurn, LoopEnd]


@dataclass
class _Seen:
    """What the view has shown or folded so far (to tell what is new in a turn)."""

    kinds: set[str] = field(default_factory=set)
    forms: dict[str, set[tuple[object, ...]]] = field(default_factory=dict)
    first_turn: dict[int, tuple[int, int]] = field(default_factory=dict)
    """Loop line -> (entry, turn) of the first turn of it the run made (never folded)."""

    def learn_loops(self, step: Step) -> None:
        for loop in step.loops:
            self.first_turn.setdefault(loop.line, (loop.entry, loop.iteration))

    def foldable(self, loop: LoopContext) -> bool:
        return self.first_turn.get(loop.line, (loop.entry, loop.iteration)) != (loop.entry, loop.iteration)

    def absorb(self, step: Step) -> None:
        self.kinds.update(n.kind for n in step.explanations)
        for name, form in _forms(step):
            self.forms.setdefault(name, set()).add(form)

    def novel(self, steps: Iterable[Step]) -> bool:
        """Whether anything in ``steps`` is new to the view (so the turn is shown in full)."""
        kinds: set[str] = set()
        forms: dict[str, set[tuple[object, ...]]] = {}
        for s in steps:
            if s.status == "error" or s.caught is not None or s.warnings:
                return True
            for note in s.explanations:
                if note.severity == "warning" or note.kind.startswith(ALWAYS_NEW):
                    return True
                if note.kind not in self.kinds and note.kind not in kinds:
                    return True
                kinds.add(note.kind)
            for name, form in _forms(s):
                if form not in self.forms.get(name, ()) and form not in forms.get(name, ()):
                    return True
                forms.setdefault(name, set()).add(form)
        return False


def _forms(step: Step) -> Iterable[tuple[str, tuple[object, ...]]]:
    for name, r in step.tensors.items():
        yield name, (tuple(r.shape), r.dtype, r.device)
    for name, a in step.arrays.items():
        yield name, (tuple(a.shape), a.dtype, "numpy")


@dataclass
class _Turn:
    level: int
    entry: int
    iteration: int
    before: Step | None
    items: list[Step | LoopSummary]

    def holds(self, step: Step) -> bool:
        loops = step.loops
        return len(loops) > self.level and (loops[self.level].entry, loops[self.level].iteration) == (
            self.entry,
            self.iteration,
        )

    def holds_loop(self, summary: LoopSummary) -> bool:
        outer = summary.enclosing
        return len(outer) > self.level and (outer[self.level].entry, outer[self.level].iteration) == (
            self.entry,
            self.iteration,
        )


class Folder:
    """Folds the turns of loops at ``level`` and deeper (a turn shown in full folds the loops inside it)."""

    def __init__(self, seen: _Seen, level: int = 0, previous: Step | None = None) -> None:
        self.seen = seen
        self.level = level
        self.previous = previous
        self.turn: _Turn | None = None

    def feed(self, item: Step | LoopSummary) -> list[Event]:
        """Events for the next step or ended loop (a held turn comes out once it ends)."""
        turn = self.turn
        if isinstance(item, LoopSummary):
            if turn is not None and turn.holds_loop(item):
                turn.items.append(item)
                return []
            return [*self.flush(), LoopEnd(item, shown=item.iterations > 1)]
        if turn is not None and turn.holds(item):
            turn.items.append(item)
            return []
        out = self.flush()
        for level in range(self.level, len(item.loops)):
            loop = item.loops[level]
            if self.seen.foldable(loop):
                self.turn = _Turn(level, loop.entry, loop.iteration, self.previous, [item])
                return out
        self.seen.absorb(item)
        self.previous = item
        out.append(Show(item))
        return out

    def flush(self) -> list[Event]:
        """The held turn, folded or (if something in it is new) in full."""
        turn, self.turn = self.turn, None
        if turn is None:
            return []
        steps = [i for i in turn.items if isinstance(i, Step)]
        self.previous = steps[-1]
        if self.seen.novel(steps):
            inner = Folder(self.seen, turn.level + 1, turn.before)
            out: list[Event] = []
            for item in turn.items:
                out += inner.feed(item)
            return out + inner.flush()
        for s in steps:
            self.seen.absorb(s)
        folded = folded_turn(steps, turn.before, steps[0].loops[: turn.level + 1])
        return [*(Show(s, shown=False) for s in steps), folded]


def _grad_fact(r: TensorRecord) -> object:
    g = r.grad
    return None if g is None else (g.preview if g.values is None else repr(g.values), g.data_ptr)


def folded_turn(steps: list[Step], before: Step | None, loops: tuple[LoopContext, ...]) -> FoldedTurn:
    """The one-line account of a turn: its lines, and what changed from before it to its end."""
    last = steps[-1]
    old = before.tensors if before is not None else {}
    scalars: list[tuple[str, float | None, float]] = []
    versions: list[str] = []
    grads: list[str] = []
    for name, r in last.tensors.items():
        if ":" in name:
            continue
        prior = old.get(name)
        value = scalar_of(r)
        was = scalar_of(prior) if prior is not None else None
        if value is not None and not _same(value, was):
            scalars.append((name, was, value))
        if prior is not None and prior.version != r.version and value is None:
            versions.append(name)
        if prior is not None and _grad_fact(prior) != _grad_fact(r):
            grads.append(name)
    return FoldedTurn(
        loops=loops,
        first_step=steps[0].index,
        last_step=last.index,
        lines=list(dict.fromkeys(s.line for s in steps)),
        scalars=scalars,
        versions=versions,
        grads=grads,
        printed="".join(s.stdout for s in steps),
    )


def _same(a: float, b: float | None) -> bool:
    return b is not None and (a == b or (math.isnan(a) and math.isnan(b)))


class StepFlow:
    """From arriving steps to what a view draws: folding (tables, Markdown), --watch, loop ends."""

    def __init__(self, view: ViewOptions, fold: bool) -> None:
        self.view = view
        self.tracker = LoopTracker()
        self.seen = _Seen()
        # --step/--from/--to select exact steps, shown as they are.
        self.folder = Folder(self.seen) if fold and view.first is None and view.last is None else None
        self.watch = Watch(view) if view.watch else None
        self.hidden_by_watch = 0
        self.folded_steps = 0
        self.folded_turns = 0

    def feed(self, step: Step) -> list[Event]:
        """Events to draw now that ``step`` arrived."""
        ended = self.tracker.feed(step)
        self.seen.learn_loops(step)
        if self.folder is None:
            return [*(LoopEnd(s) for s in ended), self._visible(Show(step, self.view.shows(step)))]
        out: list[Event] = []
        for summary in ended:
            out += self.folder.feed(summary)
        out += self.folder.feed(step)
        return [self._visible(e) for e in out]

    def close(self) -> list[Event]:
        """Events for what is still held when the run ends."""
        ended = self.tracker.close()
        if self.folder is None:
            return [LoopEnd(s) for s in ended]
        out: list[Event] = []
        for summary in ended:  # a loop that ended in a held turn stays folded with it
            out += self.folder.feed(summary)
        out += self.folder.flush()
        return [self._visible(e) for e in out]

    def footnotes(self) -> list[str]:
        """Lines for the end of the view: steps folded, steps hidden by --watch."""
        out = []
        if self.folded_turns:
            turns = f"{self.folded_turns} later loop turn{'s' if self.folded_turns != 1 else ''}"
            out.append(f"{self.folded_steps} steps folded into {turns} (--all-steps shows every step)")
        if self.hidden_by_watch:
            out.append(f"{self.hidden_by_watch} step{'s' if self.hidden_by_watch != 1 else ''} hidden by --watch")
        return out

    def _visible(self, event: Event) -> Event:
        if isinstance(event, Show):
            step = event.step
            shown = event.shown and self.view.shows(step)
            if self.watch is not None:
                touched = self.watch.touches(step)
                if shown and not touched:
                    self.hidden_by_watch += 1
                shown = shown and touched
            return Show(step, shown) if shown != event.shown else event
        if isinstance(event, FoldedTurn):
            self.folded_turns += 1
            self.folded_steps += event.steps
            if self.watch is not None:
                return self.watch.narrow(event)
        return event


class Watch:
    """--watch NAMES: which steps touch a watched name, and which facts of a folded turn are about one."""

    def __init__(self, view: ViewOptions) -> None:
        self.watched = view.watches
        roots = sorted({n.split(".")[0].split("[")[0] for n in view.watch or ()})
        self.mention = re.compile(r"\b(" + "|".join(re.escape(r) for r in roots) + r")\b")
        self.facts: dict[str, object] = {}

    def touches(self, step: Step) -> bool:
        """The step names a watched tensor, changes or removes one, or failed."""
        facts = {n: _facts(r) for n, r in step.tensors.items() if self.watched(n)}
        changed = facts != self.facts
        self.facts = facts
        return changed or step.status == "error" or bool(self.mention.search(step.source))

    def narrow(self, turn: FoldedTurn) -> FoldedTurn:
        """The folded turn with only the watched tensors' changes."""
        return FoldedTurn(
            turn.loops,
            turn.first_step,
            turn.last_step,
            turn.lines,
            [s for s in turn.scalars if self.watched(s[0])],
            [n for n in turn.versions if self.watched(n)],
            [n for n in turn.grads if self.watched(n)],
            turn.printed,
        )


def _facts(r: TensorRecord) -> object:
    values = repr(r.values) if r.values is not None else r.preview
    return (values, r.shape, r.dtype, r.version, r.storage, _grad_fact(r))


def line_ranges(lines: Iterable[int]) -> str:
    """``14–15, 20–24``: the lines, sorted, runs of consecutive lines as ranges."""
    runs: list[list[int]] = []
    for n in sorted(set(lines)):
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}–{r[-1]}" for r in runs)


def grouped_names(names: list[str], most: int = 6) -> str:
    """``model.fc1.{weight,bias}, model.fc2.weight``: names with one owner written together."""
    groups: dict[str, list[str]] = {}
    for name in names:
        owner, dot, leaf = name.rpartition(".")
        groups.setdefault(owner + dot, []).append(leaf)
    parts = [
        prefix + (leaves[0] if len(leaves) == 1 else "{" + ",".join(leaves) + "}") for prefix, leaves in groups.items()
    ]
    return ", ".join(parts[:most]) + (f" +{len(parts) - most} more" if len(parts) > most else "")


def turn_parts(turn: FoldedTurn, previous: FoldedTurn | None = None) -> list[str]:
    """The pieces of a folded turn's line after its turn number.

    After a folded turn of the same loop (``previous``), the lines that ran and the
    tensors updated are left out when they are the same as there.
    """
    same_loop = previous is not None and [c.line for c in previous.loops] == [c.line for c in turn.loops]
    parts = []
    if not (same_loop and previous is not None and previous.lines == turn.lines):
        parts.append(f"line{'s' if len(set(turn.lines)) > 1 else ''} {line_ranges(turn.lines)}")
    parts += [f"{name} {number(was)} → {number(now)}" if was is not None else f"{name} = {number(now)}"
              for name, was, now in turn.scalars]  # fmt: skip
    updated = _updated(turn)
    if updated and not (same_loop and previous is not None and _updated(previous) == updated):
        parts.append(f"updated: {grouped_names(updated)}")
    return parts


def _updated(turn: FoldedTurn) -> list[str]:
    return list(dict.fromkeys(turn.versions + turn.grads))


__all__ = ["Event", "FoldedTurn", "Folder", "LoopEnd", "Show", "StepFlow", "Watch", "folded_turn", "turn_parts"]
