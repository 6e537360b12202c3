"""What a note rule sees: one step's facts, the names before it, and what earlier steps left.

A rule is a function ``(StepFacts) -> list[Note]``. Rules about one name at a time are
``(StepFacts, name) -> list[Note]`` and are run over the new or the kept names by
``each_new_name`` / ``each_kept_name``. Rules see only records (storages, version-counter
sharing, graph reach, grads, versions, saved-tensor events, and the operation record
``Step.ops``, which quotes each call as written), never the statement's source itself.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tcopy_cli.trace.records import ArrayRecord, Note, OpRecord, SavedEvent, Severity, Step, TensorRecord
from tcopy_cli.trace.scriptnames import script_name
from tcopy_cli.trace.values import code_span, one_line


@dataclass
class Bump:
    """A saved-tensor event and the step it happened in."""

    index: int
    line: int
    source: str
    event: SavedEvent


@dataclass(frozen=True)
class Origin:
    """A step, as an explanation quotes it: ``step 4 (line 4: y.mul_(2))``."""

    index: int
    line: int
    source: str

    @staticmethod
    def of(step: Step) -> Origin:
        """The origin of ``step``."""
        return Origin(step.index, step.line, step.source)

    def __str__(self) -> str:
        return f"step {self.index} (line {self.line}: {self.source})"


@dataclass
class ExplainState:
    """What the explain pass carries from one step to the next."""

    previous: dict[str, TensorRecord] = field(default_factory=dict)
    previous_arrays: dict[str, ArrayRecord] = field(default_factory=dict)
    previous_unlisted: dict[str, int] = field(default_factory=dict)
    """The previous step's counts of container items not listed (``Step.unlisted``)."""
    bumps: list[Bump] = field(default_factory=list)
    corrupted: list[Bump] = field(default_factory=list)
    backward_counts: dict[int, int | None] = field(default_factory=dict)
    """Backward passes into each tensor's .grad since it was last reset, by tensor identity
    (a function's argument and the caller's name count as one); None: not known since then."""
    backward_steps: list[int] = field(default_factory=list)
    bound_at: dict[str, Origin] = field(default_factory=dict)
    """The step where each name got the tensor it holds now (a plain name only where that step's
    statement binds it: one a loop header or a call bound first shows at a step that did not)."""
    version_moves: dict[str, list[Origin]] = field(default_factory=dict)
    """The steps where the version counter of a name's tensor moved (since it got that tensor)."""

    origins: dict[int, Origin] = field(default_factory=dict)
    """Every step so far by index."""
    extra: dict[str, object] = field(default_factory=dict)
    """What a rule module keeps for itself from step to step, under its own key."""

    def remember(self, facts: StepFacts) -> None:
        """Note which names this step bound and whose version counter it moved."""
        here = Origin.of(facts.step)
        self.origins[here.index] = here
        stored: set[str] | None = None
        for name, record in facts.tensors.items():
            if name in facts.new_names:
                if stored is None:
                    stored = stored_names(facts.step.source)
                if plain_name(name) and not binds(stored, name):
                    self.bound_at.pop(name, None)  # `for p in ...`, a function's argument: no step bound it
                else:
                    self.bound_at[name] = here
                self.version_moves[name] = []
            elif record.version > facts.before[name].version:
                self.version_moves.setdefault(name, []).append(here)


def stored_names(source: str) -> set[str]:
    """The plain names a statement binds (assignment targets, walrus), as written."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def plain_name(name: str) -> bool:
    """A name the script binds itself (``x``, a function's local ``f:x``), not an item or attribute."""
    return "." not in script_name(name) and "[" not in name


def binds(stored: set[str], name: str) -> bool:
    """Whether a statement that binds ``stored`` (its ``stored_names``) binds the plain name ``name``."""
    return plain_name(name) and script_name(name) in stored


@dataclass
class StepFacts:
    """One step as the rules see it, with the notes earlier rules made for it."""

    step: Step
    state: ExplainState
    notes: list[Note] = field(default_factory=list)
    cache: dict[str, Any] = field(default_factory=dict)
    """What rules derive from the facts once per step (e.g. the operation-record notes)."""
    before: dict[str, TensorRecord] = field(init=False)
    new_names: list[str] = field(init=False)
    _order: dict[str, list[str]] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.before = self.state.previous
        self.new_names = [
            n for n, r in self.tensors.items() if n not in self.before or self.before[n].object_id != r.object_id
        ]

    @property
    def tensors(self) -> dict[str, TensorRecord]:
        """Tensor records after the step."""
        return self.step.tensors

    def others(self, name: str) -> list[str]:
        """The other tensor names, those that existed before this step first."""
        order = self._order.get(name)
        if order is None:
            order = self._order[name] = [n for n in self._kept_then_new if n != name]
        return order

    @functools.cached_property
    def _kept_then_new(self) -> list[str]:
        """Every tensor name: the kept ones, then the new ones, each in table order."""
        new = set(self.new_names)
        return [n for n in self.tensors if n not in new] + self.new_names

    def same_object(self, name: str) -> list[str]:
        """Other names bound to the very same tensor object."""
        b = self.tensors[name]
        return [n for n in self.others(name) if self.tensors[n].object_id == b.object_id]

    def sharing(self, name: str) -> list[str]:
        """Other names whose tensor lies in the same storage."""
        b = self.tensors[name]
        return [n for n in self.others(name) if self.tensors[n].storage == b.storage]

    @functools.cached_property
    def kept_names(self) -> list[str]:
        """Names that still hold the tensor they held before the step, in table order."""
        new = set(self.new_names)
        return [n for n in self.tensors if n in self.before and n not in new]

    def kinds(self, kind: str) -> list[Note]:
        """Notes of one kind made so far for this step."""
        return [n for n in self.notes if n.kind == kind]


Rule = Callable[[StepFacts], list[Note]]
NameRule = Callable[[StepFacts, str], list[Note]]


def each_new_name(*rules: NameRule) -> Rule:
    """A rule that runs ``rules`` in order for every name new or rebound in the step."""

    def run(f: StepFacts) -> list[Note]:
        return [note for name in f.new_names for rule in rules for note in rule(f, name)]

    run.__name__ = "each_new_name(" + ", ".join(r.__name__ for r in rules) + ")"
    return run


def each_kept_name(*rules: NameRule) -> Rule:
    """A rule that runs ``rules`` in order for every name that still holds its tensor."""

    def run(f: StepFacts) -> list[Note]:
        return [note for name in f.kept_names for rule in rules for note in rule(f, name)]

    run.__name__ = "each_kept_name(" + ", ".join(r.__name__ for r in rules) + ")"
    return run


def note(
    kind: str,
    text: str,
    tensors: Sequence[str] = (),
    severity: Severity = "info",
    op: int | None = None,
    fix: str | None = None,
) -> Note:
    """A Note (names deduplicated, in order); ``op``: the operation of the step it is about; ``fix``: a
    line of code the note says to add."""
    return Note(kind=kind, severity=severity, text=text, tensors=tuple(dict.fromkeys(tensors)), op=op, fix=fix)


@dataclass(frozen=True)
class _Slot:
    key: Hashable


class Findings:
    """A rule's notes in order, where one finding about several names is one note.

    ``group(key, name)`` adds ``name`` to the finding ``key`` (same kind, operation,
    numbers and reason); the finding's note takes the place its first name reached.
    """

    def __init__(self) -> None:
        self._items: list[Note | _Slot] = []
        self._names: dict[Hashable, list[str]] = {}

    def add(self, made: Iterable[Note]) -> None:
        """Notes about one finding each."""
        self._items.extend(made)

    def group(self, key: Hashable, name: str) -> None:
        """``name`` shares the finding ``key``."""
        if key not in self._names:
            self._names[key] = []
            self._items.append(_Slot(key))
        self._names[key].append(name)

    def groups(self) -> dict[Hashable, list[str]]:
        """The findings about several names so far: key -> names."""
        return self._names

    def notes(self, make: Callable[[Any, list[str]], Note]) -> list[Note]:
        """The notes, each group's made by ``make(key, names)``."""
        return [make(i.key, self._names[i.key]) if isinstance(i, _Slot) else i for i in self._items]


def led_group(f: StepFacts, rule: str, name: str, names: Iterable[str], key: Callable[[str], Hashable]) -> list[str]:
    """For a rule run name by name: the names sharing ``name``'s finding if ``name`` is the first of
    them, else nothing (the first name's note tells them all). ``key(n)`` is a name's finding, or
    None for none; the groups are worked out once per step (cached under ``rule``)."""
    leaders = f.cache.get(rule)
    if leaders is None:
        by_key: dict[Hashable, list[str]] = {}
        for n in names:
            k = key(n)
            if k is not None:
                by_key.setdefault(k, []).append(n)
        leaders = f.cache[rule] = {group[0]: group for group in by_key.values()}
    return list(leaders.get(name, []))


def agree(names: Sequence[str], one: str, many: str) -> str:
    """``one`` for a single name, ``many`` for several (``was``/``were``, ``it``/``them``)."""
    return one if len(names) == 1 else many


def names_text(names: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    names = list(names)
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def quoted_call(op: OpRecord) -> str:
    """The call as the script wrote it, quoted; one written over several lines in one (``nn.ModuleDict(…)``)."""
    return code_span(one_line(op.call) or op.call)


def storage_text(r: TensorRecord) -> str:
    """``S1`` or ``S1, offset 2``."""
    return r.storage if r.storage_offset == 0 else f"{r.storage}, offset {r.storage_offset}"


def overlaps(a: TensorRecord, b: TensorRecord) -> bool:
    """True when two tensors on one storage cover at least one common byte."""
    if a.storage != b.storage:
        return False
    a0, a1 = a.byte_span()
    b0, b1 = b.byte_span()
    return a0 < b1 and b0 < a1
