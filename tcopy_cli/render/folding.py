"""Which steps a table or Markdown view shows in full, which it folds, and what --watch hides.

Steps arrive one at a time. The first turn of a loop is shown in full; each later turn is
held back until it ends and then shown as one compact line (``FoldedTurn``), unless
something new happened in it (an error, a warning, a new name, a note of a kind not seen
before or one about wrong gradients, a shape, dtype or device not seen before for a
name): then the steps of it that bring something new are shown in full, each run of its
other steps as one line (``FoldedTurn.partial``: "lines ... as before"), and the
loops inside it fold the same way. Loops
nested in loops, and the steps of script functions called in a loop, fold with the turn
they belong to. When a loop ends, its ``LoopSummary`` follows.

Folded turns after the first few are condensed: consecutive folded turns of one run of a
loop share one line, in ranges that double (turns 7–10, 11–20, 21–40, ...; see
``range_end``), so N turns take O(log N) lines. A range's line comes out as soon as its
last turn ends, when the loop ends, or when a step is shown (the range is cut there), so a
long loop still shows progress while it runs.

``StepFlow`` turns each arriving step into the events a renderer draws; JSON takes every
step and the loop summaries, nothing folded.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Union

from tcopy_cli.render import ViewOptions, plural
from tcopy_cli.render.cells import Before, Quiet, Row, quiet_form
from tcopy_cli.render.loops import LoopSummary, LoopTracker, scalar_of
from tcopy_cli.render.names import common_end, grouped_names, unlisted_pairs
from tcopy_cli.trace.records import LoopContext, Note, RunSummary, Step, TensorRecord, evolve
from tcopy_cli.trace.scriptnames import added_items as added
from tcopy_cli.trace.scriptnames import is_item, is_local

SINGLE_TURNS = 6
"""Folded turns up to this turn of a loop get a line each (turns 2..6 after a first turn in full)."""
FIRST_RANGE_END = 10
"""The first condensed line covers turns ``SINGLE_TURNS + 1`` to this; each later range ends at
twice the turn the one before it ended at (7–10, 11–20, 21–40, 41–80, ...)."""

ALWAYS_NEW = ("saved.", "grad.corrupted", "change.untracked-write", "error.")
"""Note kinds that show a turn in full every time (wrong gradients, version errors, caught errors)."""


@dataclass(frozen=True)
class Show:
    """Draw a step in full (``shown``), or only take it in for change marks."""

    step: Step
    shown: bool = True


def range_end(turn: int) -> int:
    """The last turn of the condensed line that folded turn ``turn`` goes into (itself up to ``SINGLE_TURNS``)."""
    if turn <= SINGLE_TURNS:
        return turn
    end = FIRST_RANGE_END
    while end < turn:
        end *= 2
    return end


@dataclass(frozen=True)
class FoldedTurn:
    """One later turn of a loop, or a range of consecutive ones (``through``), in one line."""

    loops: tuple[LoopContext, ...]
    """The loops down to the folded one, outermost first (the folded one at its first turn)."""
    first_step: int
    last_step: int
    lines: list[int]
    """Script lines that ran, in order of first run."""
    scalars: list[tuple[str, float | None, float]]
    """One-element tensors whose value changed: (name, before the first turn or None if new, after the last)."""
    versions: list[str]
    """Tensors whose version counter moved in a turn (one-element tensors are in ``scalars`` instead)."""
    grads: list[str]
    """Tensors whose ``.grad`` changed in a turn (both: shown as ``updated``)."""
    unlisted: dict[str, int] = field(default_factory=dict)
    """How many more (or, below 0, fewer) items of a long list the records do not list (``Step.unlisted``)."""
    added: list[str] = field(default_factory=list)
    """Items of lists, tuples and dicts bound in a turn (``losses.append(loss)``); another new name
    shows its turn in full."""
    printed: str = ""
    through: int = 0
    """The last turn the line covers when it covers several (0: only ``first_turn``)."""
    partial: bool = False
    """Steps of a turn shown in full that brought nothing new, between its steps that did."""

    @property
    def steps(self) -> int:
        """How many steps the turns ran."""
        return self.last_step - self.first_step + 1

    @property
    def first_turn(self) -> int:
        """The first turn of the folded loop the line covers."""
        return self.loops[-1].iteration

    @property
    def last_turn(self) -> int:
        """The last turn of the folded loop the line covers."""
        return self.through or self.first_turn

    @property
    def turns(self) -> int:
        """How many turns the line covers."""
        return self.last_turn - self.first_turn + 1

    def follows(self, turn: FoldedTurn) -> bool:
        """Whether this turn comes right after ``turn`` in the same run of the same loop (and range)."""
        *outer, loop = self.loops
        *outer_before, before = turn.loops
        return (
            outer == outer_before
            and (loop.line, loop.entry) == (before.line, before.entry)
            and self.first_turn == turn.last_turn + 1
            and range_end(self.first_turn) == range_end(turn.first_turn)
        )

    @property
    def ends_range(self) -> bool:
        """Whether no later turn goes on this line: its range is full, or the loop's last turn is in it."""
        loop = self.loops[-1]
        return self.last_turn >= range_end(self.first_turn) or self.last_turn == loop.total


@dataclass(frozen=True)
class LoopEnd:
    """A loop ended: its summary."""

    summary: LoopSummary
    shown: bool = True


Event = Union[Show, FoldedTurn, LoopEnd]


@dataclass
class _Range:
    """Folded turns being condensed into one line: the line so far, the step before its first turn,
    and what each turn printed (joined once, when the line comes out)."""

    line: FoldedTurn
    before: Step | None
    printed: list[str]

    def add(self, turn: FoldedTurn, last: Step) -> None:
        """Take in the next folded turn (``last``: its last step)."""
        line = self.line
        moved = {s[0] for s in line.scalars} | {s[0] for s in turn.scalars}
        self.line = replace(
            line,
            last_step=turn.last_step,
            through=turn.last_turn,
            lines=list(dict.fromkeys(line.lines + turn.lines)),
            scalars=scalar_changes(self.before, last, moved),
            versions=list(dict.fromkeys(line.versions + turn.versions)),
            grads=list(dict.fromkeys(line.grads + turn.grads)),
            added=added_items(self.before, last),
            unlisted=unlisted_changes(self.before, last),
        )
        self.printed.append(turn.printed)

    def done(self) -> FoldedTurn:
        """The range's line."""
        return replace(self.line, printed="".join(self.printed))


@dataclass
class _Seen:
    """What the view has shown or folded so far (to tell what is new in a turn)."""

    kinds: set[str] = field(default_factory=set)
    forms: dict[str, set[tuple[object, ...]]] = field(default_factory=dict)
    first_turn: dict[int, tuple[int, int]] = field(default_factory=dict)
    """Loop line -> (entry, turn) of the first turn of it the run made (never folded)."""
    records: dict[str, object] = field(default_factory=dict)
    """Name -> the last record taken in for it (a step of a run from the worker keeps the
    record object of a tensor that did not change, and its form is known already)."""
    depth: int | None = None
    """--depth: steps deeper than it are hidden, not folded (their notes go with their call)."""

    def learn_loops(self, step: Step) -> None:
        for loop in step.loops:
            self.first_turn.setdefault(loop.line, (loop.entry, loop.iteration))

    def foldable(self, loop: LoopContext) -> bool:
        return self.first_turn.get(loop.line, (loop.entry, loop.iteration)) != (loop.entry, loop.iteration)

    def absorb(self, step: Step) -> None:
        self.kinds.update(n.kind for n in step.explanations)
        for name, form, pattern, kind in _forms(step, self.records):
            self.forms.setdefault(name, set()).add(form)
            if pattern is not None:
                self.forms.setdefault(pattern, set()).add(kind)

    def novel(self, steps: Iterable[Step]) -> bool:
        """Whether anything in ``steps`` is new to the view (so the turn is shown in full)."""
        kinds: set[str] = set()
        forms: dict[str, set[tuple[object, ...]]] = {}
        known = dict(self.records)
        for s in steps:
            if s.status == "error" or s.caught is not None or s.warnings:
                return True
            for note in s.explanations:
                if note.severity == "warning" or note.kind.startswith(ALWAYS_NEW):
                    return True
                if note.kind not in self.kinds and note.kind not in kinds:
                    return True
                kinds.add(note.kind)
            for name, form, pattern, kind in _forms(s, known):
                if name in self.forms or name in forms:  # a name seen before: in a form of its own?
                    if form not in self.forms.get(name, ()) and form not in forms.get(name, ()):
                        return True
                elif pattern is None:  # a new name
                    return True
                if (
                    pattern is not None
                    and kind not in self.forms.get(pattern, ())
                    and kind not in forms.get(pattern, ())
                ):
                    return True
                forms.setdefault(name, set()).add(form)
                if pattern is not None:
                    forms.setdefault(pattern, set()).add(kind)
        return False


_INDEX = re.compile(r"\[\d+\]")

Form = tuple[object, ...]


def _forms(step: Step, known: dict[str, object]) -> Iterable[tuple[str, Form, str | None, Form]]:
    """Each record not ``known`` already under its name (then known): (name, its shape/dtype/device,
    for an item of a list or tuple its pattern ``xs[#]`` else None, the form the pattern holds).

    A name keeps its own forms: an item whose shape changes brings something new. A new item
    is held against the items before it (``xs[#]``): one like them, with the same shape,
    dtype, device, requires_grad and grad_fn (``losses.append(loss)`` in every turn), brings
    nothing new; an item of another kind does (``hist.append(loss)`` after
    ``hist.append(loss.detach())``: now it holds a graph).
    """
    for name, r in step.tensors.items():
        if known.get(name) is not r:
            known[name] = r
            form: Form = (tuple(r.shape), r.dtype, r.device)
            pattern = _INDEX.sub("[#]", name)
            if pattern == name:
                yield name, form, None, form
            else:
                yield name, form, pattern, (*form, r.requires_grad, r.grad_fn)
    for name, a in step.arrays.items():
        if known.get("array " + name) is not a:
            known["array " + name] = a
            form = (tuple(a.shape), a.dtype, "numpy")
            pattern = _INDEX.sub("[#]", name)
            yield name, form, (None if pattern == name else "array " + pattern), form


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
        self.range: _Range | None = None

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
        out = self._end_turn()
        for level in range(self.level, len(item.loops)):
            loop = item.loops[level]
            if self.seen.foldable(loop):
                self.turn = _Turn(level, loop.entry, loop.iteration, self.previous, [item])
                return out
        self.seen.absorb(item)
        self.previous = item
        out += self.cut()
        out.append(Show(item))
        return out

    def flush(self) -> list[Event]:
        """The held turn and the range being condensed: what is left when the run or a loop ends."""
        return self._end_turn() + self.cut()

    def cut(self) -> list[Event]:
        """The line of the range being condensed, if there is one (before anything else is drawn)."""
        held, self.range = self.range, None
        return [held.done()] if held is not None else []

    def _end_turn(self) -> list[Event]:
        """The held turn, folded (into the range being condensed) or (if something in it is new) in full."""
        turn, self.turn = self.turn, None
        if turn is None:
            return []
        steps = [i for i in turn.items if isinstance(i, Step)]
        self.previous = steps[-1]
        if self.seen.novel(steps):
            return self._shown_turn(turn)
        for s in steps:
            self.seen.absorb(s)
        folded = folded_turn(steps, turn.before, steps[0].loops[: turn.level + 1])
        held = self.range
        out = [] if held is not None and folded.follows(held.line) else self.cut()
        out += [Show(s, shown=False) for s in steps]
        if self.range is None:
            self.range = _Range(folded, turn.before, [folded.printed])
        else:
            self.range.add(folded, steps[-1])
        if self.range.line.ends_range:
            out += self.cut()
        return out

    def _shown_turn(self, turn: _Turn) -> list[Event]:
        """A turn with something new in it: its steps that bring something new in full, each run
        of the others in one line (``partial``), the loops inside it folded as usual."""
        inner = Folder(self.seen, turn.level + 1, turn.before)
        out = self.cut()
        plain: list[Step] = []  # consecutive steps of the turn itself with nothing new
        before = turn.before

        def fold_plain() -> list[Event]:
            if not plain:
                return []
            depth = self.seen.depth
            told = [s for s in plain if depth is None or s.depth <= depth]  # --depth hides the rest
            line = folded_turn(told, before, told[0].loops[: turn.level + 1]) if told else None
            events: list[Event] = [Show(s, shown=False) for s in plain]
            plain.clear()
            return [*events, replace(line, partial=True)] if line is not None else events

        for part in _parts(turn.items, turn.level + 1):
            steps = [i for i in part if isinstance(i, Step)]
            if steps and not self.seen.novel(steps):
                for step in steps:
                    self.seen.absorb(step)
                    if not plain:
                        before = inner.previous
                    plain.append(step)
                    inner.previous = step
                continue
            out += fold_plain()
            for item in part:
                out += inner.feed(item)
        return out + fold_plain() + inner.flush()


def _parts(items: list[Step | LoopSummary], depth: int) -> list[list[Step | LoopSummary]]:
    """A turn's items in the parts ``Folder._shown_turn`` judges whole: each step of the turn
    itself alone, and each run of a loop inside it (its steps, with the loops inside them and
    their summaries) together: a run with nothing new in it folds with the steps around it, its
    turns not drawn one line each."""
    parts: list[list[Step | LoopSummary]] = []
    inside = False
    for item in items:
        deeper = isinstance(item, LoopSummary) or len(item.loops) > depth
        if deeper and inside:
            parts[-1].append(item)
        else:
            parts.append([item])
        inside = deeper
    return parts


def _grad_fact(r: TensorRecord) -> object:
    g = r.grad
    return None if g is None else (g.preview if g.values is None else repr(g.values), g.data_ptr)


def folded_turn(steps: list[Step], before: Step | None, loops: tuple[LoopContext, ...]) -> FoldedTurn:
    """The one-line account of a turn: its lines, and what changed from before it to its end."""
    last = steps[-1]
    old = before.tensors if before is not None else {}
    versions: list[str] = []
    grads: list[str] = []
    added = added_items(before, last)
    for name, r in last.tensors.items():
        prior = old.get(name)
        if is_local(name) or prior is None:
            continue
        if prior.version != r.version and scalar_of(r) is None:
            versions.append(name)
        if _grad_fact(prior) != _grad_fact(r):
            grads.append(name)
    return FoldedTurn(
        loops=loops,
        first_step=steps[0].index,
        last_step=last.index,
        lines=list(dict.fromkeys(s.line for s in steps)),
        scalars=[c for c in scalar_changes(before, last) if c[0] not in added],
        versions=versions,
        grads=grads,
        added=added,
        unlisted=unlisted_changes(before, last),
        printed="".join(s.stdout for s in steps),
    )


def unlisted_changes(before: Step | None, last: Step) -> dict[str, int]:
    """How the count of items past those listed changed from ``before`` to ``last``, by container."""
    pairs = unlisted_pairs(before.unlisted if before is not None else {}, last.unlisted)
    return {name: after - was for name, (was, after) in pairs.items()}


def added_items(before: Step | None, last: Step) -> list[str]:
    """Items a list, tuple or dict gained from ``before`` to ``last`` (see ``scriptnames.added_items``)."""
    if before is None:
        return added(({}, {}), (last.tensors, last.unlisted))
    return added((before.tensors, before.unlisted), (last.tensors, last.unlisted))


def scalar_changes(
    before: Step | None, last: Step, names: set[str] | None = None
) -> list[tuple[str, float | None, float]]:
    """One-element tensors whose value at ``last`` differs from ``before`` (only ``names``, if given):
    (name, value before or None if it was not one, value at ``last``)."""
    old = before.tensors if before is not None else {}
    out: list[tuple[str, float | None, float]] = []
    for name, r in last.tensors.items():
        if is_local(name) or (names is not None and name not in names):
            continue
        prior = old.get(name)
        value = scalar_of(r)
        was = scalar_of(prior) if prior is not None else None
        if value is not None and not _same(value, was):
            out.append((name, was, value))
    return out


def _same(a: float, b: float | None) -> bool:
    return b is not None and (a == b or (math.isnan(a) and math.isnan(b)))


class StepFlow:
    """From arriving steps to what a view draws: folding (tables, Markdown), --watch, loop ends."""

    def __init__(self, view: ViewOptions, fold: bool, carry_notes: bool = True) -> None:
        self.view = view
        # --depth N: the notes of the steps it hides go under the next step shown at depth N or less
        # (the statement whose call ran them); JSON, which keeps every step, passes False.
        self.carry_notes = carry_notes and view.depth is not None
        self.held_notes: dict[tuple[str, int, str, str], tuple[Note, int, bool]] = {}
        self.tracker = LoopTracker()
        self.seen = _Seen(depth=view.depth)
        # --step/--from/--to select exact steps, shown as they are.
        self.folder = Folder(self.seen) if fold and view.first is None and view.last is None else None
        self.watch = Watch(view) if view.watch else None
        self.hidden_by_watch = 0
        self.folded_steps = 0
        self.folded_turns = 0
        self.folded_in_part = 0

    def feed(self, step: Step) -> list[Event]:
        """Events to draw now that ``step`` arrived."""
        if self.carry_notes:
            step = self._carry(step)
        ended = self.tracker.feed(step)
        self.seen.learn_loops(step)
        if self.folder is None:
            return [*(LoopEnd(s) for s in ended), self._visible(Show(step, self.view.shows(step)))]
        out: list[Event] = []
        for summary in ended:
            out += self.folder.feed(summary)
        out += self.folder.feed(step)
        return [self._visible(e) for e in out]

    def _carry(self, step: Step) -> Step:
        """A step --depth hides gives up its notes; the next step within --depth takes those about a
        tensor it shows (a note's first tensor is what it is about), before its own, each marked with
        where it ran. Notes of one kind about one tensor from one line (a loop in the hidden
        function) are one: the last, with how many there were."""
        assert self.view.depth is not None
        if step.depth > self.view.depth:
            for n in step.explanations:
                key = (n.kind, step.line, step.function or "", n.tensors[0] if n.tensors else "")
                kept, count, _ = self.held_notes.get(key, (n, 0, False))
                # A warning outranks the shorter reminders of it that later turns give (grad.not-reset).
                first = kept.severity == "warning" and n.severity != "warning"
                self.held_notes[key] = (kept if first else n, count + 1, first)
            # Its notes go with the step that takes them: folding judges that step by them, not this one.
            return evolve(step, explanations=[]) if step.explanations else step
        if not self.held_notes:
            return step
        held = []
        for (_, line, function, _), (n, count, first) in self.held_notes.items():
            if n.tensors and n.tensors[0] in step.tensors:  # a function's locals are gone after its call
                where = f"line {line}, in {function}()" if function else f"line {line}"
                times = f", the {'first' if first else 'last'} of {count} like it" if count > 1 else ""
                held.append(evolve(n, text=f"{where}{times}: {n.text}"))
        self.held_notes = {}
        return evolve(step, explanations=[*held, *step.explanations]) if held else step

    def close(self, run: RunSummary | None = None) -> list[Event]:
        """Events for what is still held when the run ends (``run``: how it ended)."""
        ended = self.tracker.close(run)
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
        if self.folded_turns or self.folded_in_part:
            parts = []
            if self.folded_turns:
                turns = plural(self.folded_turns, "later loop turn")
                parts.append(f"{plural(self.folded_steps, 'step')} folded into {turns}")
            if self.folded_in_part:
                parts.append(
                    f"{plural(self.folded_in_part, 'step')} with nothing new folded inside turns shown in full"
                )
            out.append("; ".join(parts) + " (--all-steps shows every step)")
        if self.hidden_by_watch:
            out.append(f"{plural(self.hidden_by_watch, 'step')} hidden by --watch")
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
            if event.partial:
                self.folded_in_part += event.steps
            else:
                self.folded_turns += event.turns
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
        self.facts: Before[dict[str, object]] = Before()  # the watched tensors' facts

    def touches(self, step: Step) -> bool:
        """The step names a watched tensor, changes or removes one, or failed.

        Changes count from the state before the statement began (the last step at its call
        depth or shallower), so a call whose function changed a watched tensor touches it."""
        facts = {n: _facts(r) for n, r in step.tensors.items() if self.watched(n)}
        changed = facts != (self.facts.of(step.depth) or {})
        self.facts.add(step.depth, facts)
        return changed or step.status == "error" or bool(self.mention.search(step.source))

    def narrow(self, turn: FoldedTurn) -> FoldedTurn:
        """The folded turn with only the watched tensors' changes."""
        return replace(
            turn,
            scalars=[s for s in turn.scalars if self.watched(s[0])],
            versions=[n for n in turn.versions if self.watched(n)],
            grads=[n for n in turn.grads if self.watched(n)],
            added=[n for n in turn.added if self.watched(n)],
            unlisted={n: d for n, d in turn.unlisted.items() if self.watched(n)},
        )


def _facts(r: TensorRecord) -> object:
    values = repr(r.values) if r.values is not None else r.preview
    return (values, r.shape, r.dtype, r.version, r.storage, _grad_fact(r))


UNCHANGED_FOLD = 3
"""Unchanged rows fold into one line when there are at least this many (two stay as rows)."""


def seen_key(row: Row) -> tuple[object, ...]:
    """What a row is held against: its cells and, since values and grad cells are cut down
    (and the table draws them from the record), the record's full facts."""
    return (row.cells, row.facts)


def seen_keys(row: Row) -> dict[str, object]:
    """``seen_key`` of a row by its name, and of a module's row (``render.modules``) also of each of
    its tensors: a later table holds a tensor against it whether that draws the module or the tensor."""
    keys: dict[str, object] = {}
    members = row.facts.get("seen") if row.members else None
    if isinstance(members, tuple):
        keys.update(members)
    keys[row.cells["name"]] = seen_key(row)
    return keys


UNSEEN_IN_MODULE_ROWS = ("values", "shares")
"""What a module's row (``render.modules``) never draws of its tensors: their values (it counts
them) and the other names they go by."""


def _as_module_row_shows(key: object) -> object:
    """``seen_key`` of a tensor without what a module's row does not draw of it."""
    if not (isinstance(key, tuple) and len(key) == 2 and all(isinstance(k, dict) for k in key)):
        return key
    cells, facts = key
    return tuple({k: v for k, v in part.items() if k not in UNSEEN_IN_MODULE_ROWS} for part in (cells, facts))


def _seen_before(row: Row, seen: dict[str, object]) -> bool:
    """The row reads as the table drawn last showed it: as a row, or (a module's row) tensor by
    tensor, each as a module's row draws it (its values and other names left out: their moving
    running statistics, a name like ``b`` bound to another block, change nothing the row says)."""
    name = row.cells["name"]
    if seen.get(name) == seen_key(row):
        return True
    members = row.facts.get("seen") if row.members else None
    return isinstance(members, tuple) and all(
        name in seen and _as_module_row_shows(seen[name]) == _as_module_row_shows(key) for name, key in members
    )


def fold_unchanged(
    rows: list[Row], seen: dict[str, object], named: Iterable[str] = (), aside: frozenset[int] = frozenset()
) -> tuple[list[Row], list[str]]:
    """The rows a table draws, and the names of the unchanged rows folded into one line.

    A row folds when the step changed nothing about its tensor (no ``+`` or ``~`` mark)
    and it reads, cell for cell, as it did in the table drawn last (``seen``: that table's
    cells by name): the reader has it right above. A tensor that changed in steps not
    drawn since reads differently and keeps its row. So does one the step's notes name
    (``named``; ``x.grad`` names ``x``), one whose storage a drawn row shows too, and one
    a drawn tensor's backward reaches (its measured graph reach): a note, a shared storage
    label or the graph points the reader at the row, but not at a module's row, which
    draws none of its tensors' values (the note names them; the folded line names the
    module as its row did). Fewer than ``UNCHANGED_FOLD`` such tensors stay drawn, so a
    small table is always whole. A list item no table drew yet (a
    folded turn added it: its line said so) folds too: a loop that appended a thousand
    items does not draw them all in the next turn shown in full. ``aside``: ids of rows the
    ``also named`` line names instead of drawing (``fold_aliases``): they point the reader at
    no row, and unchanged as the rows they are the tensors of, they name them there.
    """
    kept = {n.removesuffix(".grad") for n in named}
    same = [
        r
        for r in rows
        if not r.new
        and not r.changed
        and (r.members or kept.isdisjoint(r.names))
        and (_seen_before(r, seen) or ((name := r.cells["name"]) not in seen and is_item(name)))
    ]
    while True:  # a row kept for a drawn row can keep others in turn (x reached, then x's view)
        folded = {id(r) for r in same}
        drawn = [r for r in rows if id(r) not in folded and id(r) not in aside]
        drawn_storage = {label for r in drawn for label in _labels_drawn(r)}
        reached = {n for r in drawn if isinstance(r.record, TensorRecord) for n in r.record.reaches}
        still = [
            r
            for r in same
            if drawn_storage.isdisjoint(_storage_labels(r)) and (r.members or reached.isdisjoint(r.names))
        ]
        if len(still) == len(same):
            break
        same = still
    if sum(len(r.names) for r in same) < UNCHANGED_FOLD or not drawn:
        return rows, []
    folded = {id(r) for r in same}
    return [r for r in rows if id(r) not in folded], [r.cells["name"] for r in same]


def fold_aliases(rows: list[Row], keep: Iterable[str] = (), among: list[Row] | None = None) -> tuple[list[Row], str]:
    """The rows a table draws, and the ``also named: ...`` line ("" for none): a row whose tensor
    is the very object a row above it holds, changed in the same facts (the same mark), is that
    row again under another name (a module passed to ``train(model)`` shows each parameter as
    ``model.0.weight`` and ``train:model.0.weight``). Its name is written, with the name it is the
    same tensor as. A name in ``keep`` (one --watch names) keeps its row; fewer than
    ``UNCHANGED_FOLD`` such rows stay drawn; unchanged rows fold as ``fold_unchanged`` says.
    ``among``: the table's rows before unchanged ones folded (the row above may be one of them,
    named on the ``unchanged`` line); ``rows`` by default."""
    table = rows if among is None else among
    pairs, folded = _alias_pairs(table, keep)
    folded &= {id(r) for r in rows}
    pairs = [p for p in pairs if p[2] in folded]
    if len(pairs) < UNCHANGED_FOLD:  # as with unchanged rows, a small table stays whole
        return rows, ""
    kinds = {"tensors": {n for r in table for n in r.names}, "parameters": _parameters(table)}
    return [r for r in rows if id(r) not in folded], "also named: " + "; ".join(
        alias_clauses([(a, o) for a, o, _ in pairs], kinds)
    )


def _parameters(rows: list[Row]) -> set[str]:
    """The names of the leaf tensors that require grad among ``rows`` (a module's row: all its tensors or none)."""
    out: set[str] = set()
    for r in rows:
        if r.members:
            if r.cells.get("autograd") == "leaf+grad":
                out.update(r.members)
        elif isinstance(r.record, TensorRecord) and r.record.requires_grad and r.record.is_leaf:
            out.add(r.cells["name"])
    return out


def _alias_pairs(rows: list[Row], keep: Iterable[str] = ()) -> tuple[list[tuple[str, str, int]], set[int]]:
    """(name, the name above it that is the same tensor, the row's id) for each row ``fold_aliases``
    names on its ``also named`` line, and those rows' ids."""
    kept = set(keep)
    first: dict[int, tuple[Row, str]] = {}
    pairs: list[tuple[str, str, int]] = []
    folded: set[int] = set()
    for r in rows:
        objects = r.facts.get("objects") if r.members else None
        if isinstance(objects, tuple):  # a module's row (``render.modules``): each of its tensors
            for object_id, member in objects:
                if object_id:
                    first.setdefault(object_id, (r, member))
            continue
        rec = r.record
        if not isinstance(rec, TensorRecord) or not rec.object_id:
            continue
        o, name = first.setdefault(rec.object_id, (r, r.cells["name"]))
        # the same facts changed: a name rebound onto the tensor (for p in m.parameters()) is not
        # the tensor changed in place, though both are marked ~
        if o is not r and o.new == r.new and o.changed == r.changed and r.cells["name"] not in kept:
            pairs.append((r.cells["name"], name, id(r)))
            folded.add(id(r))
    return pairs, folded


def alias_clauses(pairs: list[tuple[str, str]], kinds: dict[str, set[str]] | None = None) -> list[str]:
    """``train:net.{0,2}.weight (the same tensors as model.{0,2}.weight)``, ``ys[0…39] (the same
    tensors as xs[0…39])``: names that differ only in how they begin, written together where both
    read as one (each name of the first form is the one of the second in the same place); else
    ``b (the same tensor as a)`` each. Where they are every tensor (or every parameter) of one
    module and another's of the same names (``kinds``: the table's names of each kind), ``b's 12
    tensors (the same tensors as model.blocks.9's of the same names)``."""
    by_start: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for alias, original in pairs:
        common = common_end(alias, original)
        by_start.setdefault((alias[: len(alias) - common], original[: len(original) - common]), []).append(
            (alias, original)
        )
    clauses = []
    for (mine, theirs), group in by_start.items():
        aliases, originals = [a for a, _ in group], [o for _, o in group]
        whole = _whole_module(mine, theirs, group, kinds or {})
        if whole is not None:
            whole = f"{mine}'s {len(group)} {whole} (the same tensors as {theirs}'s of the same names)"
        together = grouped_names(originals, most=len(originals)).split(", ")
        written = grouped_names(aliases, most=len(aliases))
        if len(group) > 1 and all(p.startswith(theirs) for p in together):
            mapped = ", ".join(mine + p[len(theirs) :] for p in together)
            if written == mapped:
                clause = f"{written} (the same tensors as {', '.join(together)})"
                clauses.append(whole if whole is not None and len(clause) > WRITTEN_OUT else clause)
                continue
        if whole is not None:
            clauses.append(whole)
            continue
        if len(group) >= ALIAS_RUN and mine and theirs and all(a[len(mine)] == "." for a in aliases):
            # a module under another name: b.0.weight is model.blocks.9.0.weight, and so on
            clauses.append(f"{written} (each the same tensor as its name with {theirs} for {mine})")
            continue
        clauses += [f"{a} (the same tensor as {o})" for a, o in group]
    return clauses


def _whole_module(mine: str, theirs: str, group: list[tuple[str, str]], kinds: dict[str, set[str]]) -> str | None:
    """``tensors`` (or ``parameters``) where ``group`` pairs every tensor (parameter) of module
    ``mine`` with the one of module ``theirs`` of the same name, each of them, else None."""
    if len(group) < ALIAS_RUN or not mine or not theirs:
        return None
    aliases, originals = {a for a, _ in group}, {o for _, o in group}
    for kind, names in kinds.items():
        if aliases == {n for n in names if n.startswith(mine + ".")} and originals == {
            n for n in names if n.startswith(theirs + ".")
        }:
            return kind
    return None


ALIAS_RUN = 3
WRITTEN_OUT = 90
"""An ``also named`` clause that writes out both modules' names longer than this tells them as
every tensor of one module (``b's 12 tensors (the same tensors as model.blocks.9's ...)``)."""
"""From this many tensors of one module under another module's names (``b.0.weight`` is
``model.blocks.9.0.weight``, and so on), the ``also named`` line writes them as one clause."""


class SeenRows:
    """The cells of the table drawn last, by name: what a later table's unchanged rows are held against."""

    def __init__(self) -> None:
        self.cells: dict[str, object] = {}
        self.unlisted: dict[str, int] = {}
        """The items not listed (``Step.unlisted``) as of the step drawn last."""

    def fold(
        self, rows: list[Row], step: Step, options: ViewOptions, fresh: bool = False
    ) -> tuple[list[Row], list[str]]:
        """The rows to draw and the lines under them, ``unchanged: ...`` and ``also named: ...``,
        of a table about to be drawn (``fold_unchanged``, ``fold_aliases``; nothing folds with
        --all-steps, ``fresh`` or an error); remembers it."""
        # A failing step folds nothing: the error may be about any of its tensors.
        whole = fresh or not options.fold or step.error is not None
        self_cells, self.cells = self.cells, {k: v for r in rows for k, v in seen_keys(r).items()}
        if whole:
            return rows, []
        keep, named = options.watch or (), options.noted_names(step)
        pairs, aside = _alias_pairs(rows, keep)
        drawn, names = fold_unchanged(rows, self_cells, named, frozenset(aside if len(pairs) >= UNCHANGED_FOLD else ()))
        drawn, aliases = fold_aliases(drawn, keep, rows)
        if names and not aliases and aside:  # the rows set aside are drawn after all: fold as if drawn
            drawn, names = fold_unchanged(rows, self_cells, named)
            drawn, aliases = fold_aliases(drawn, keep, rows)
        # Every folded name is written out: a row is either drawn or named, never just counted.
        lines = [f"unchanged: {grouped_names(names, most=len(names))}"] if names else []
        return drawn, lines + ([aliases] if aliases else [])

    def quiet(self, step: Step, rows: list[Row], gone: list[str], drawn: bool) -> Quiet:
        """``quiet_form``, where a statement's one line also needs each row to read as the table
        drawn last showed it: one that changed in steps not drawn (``--depth``) draws the table."""
        quiet = quiet_form(step, rows, gone, drawn)
        unlisted, self.unlisted = self.unlisted, step.unlisted
        # "no tensor changed" is not said of a step that changed how many items are not listed
        if quiet.one_line is not None and step.unlisted != unlisted:
            return Quiet(None, False)
        if quiet.statement and quiet.told and any(self._stale(r) for r in rows):
            return Quiet(None, False)
        return quiet

    def _stale(self, row: Row) -> bool:
        """The row reads otherwise than in the table drawn last (it changed in steps not drawn)."""
        return any(name in self.cells and self.cells[name] != key for name, key in seen_keys(row).items())


def _storage_label(row: Row) -> str | None:
    """``S3`` for a row whose storage column reads ``S3`` or ``S3+16`` (None for none)."""
    label = row.cells.get("storage", "-").partition("+")[0]
    return None if label in ("", "-") else label


_SPAN = re.compile(r"([A-Z]+)(\d+)–(\d+)")


def _labels_drawn(row: Row) -> frozenset[str]:
    """The storage labels a drawn row shows: ``S3`` (or ``S3+16``), each of a module row's span
    ``S4–9``; none for ``8 storages``, which points the reader at no row."""
    if not row.members:
        return _storage_labels(row)
    span = _SPAN.fullmatch(row.cells.get("storage", ""))
    if span is None:
        label = _storage_label(row)
        return frozenset() if label is None or not label[:1].isalpha() else frozenset((label,))
    kind, first, last = span[1], int(span[2]), int(span[3])
    return frozenset(f"{kind}{n}" for n in range(first, last + 1))


def _storage_labels(row: Row) -> frozenset[str]:
    """The storage labels of a row's tensors (a module row's: each of its tensors')."""
    if row.members:
        labels = row.facts.get("storages")
        return labels if isinstance(labels, frozenset) else frozenset()
    label = _storage_label(row)
    return frozenset() if label is None else frozenset((label,))


__all__ = [
    "Event",
    "FoldedTurn",
    "Folder",
    "LoopEnd",
    "Show",
    "StepFlow",
    "Watch",
    "alias_clauses",
    "folded_turn",
    "range_end",
]
