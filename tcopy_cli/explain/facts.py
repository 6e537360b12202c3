"""What a note rule sees: one step's facts, the names before it, and what earlier steps left.

A rule is a function ``(StepFacts) -> list[Note]``. Rules about one name at a time are
``(StepFacts, name) -> list[Note]`` and are run over the new or the kept names by
``each_new_name`` / ``each_kept_name``. Rules see only records (storages, version-counter
sharing, graph reach, grads, versions, saved-tensor events, and the operation record
``Step.ops``, which quotes each call as written), never the statement's source itself.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tcopy_cli.trace.records import ArrayRecord, Note, SavedEvent, Severity, Step, TensorRecord


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
    bumps: list[Bump] = field(default_factory=list)
    corrupted: list[Bump] = field(default_factory=list)
    backward_counts: dict[int, int] = field(default_factory=dict)
    """Backward passes into each tensor's .grad since it was last reset, by tensor identity
    (a function's argument and the caller's name count as one)."""
    backward_steps: list[int] = field(default_factory=list)
    bound_at: dict[str, Origin] = field(default_factory=dict)
    """The step where each name got the tensor it holds now."""
    version_moves: dict[str, list[Origin]] = field(default_factory=dict)
    """The steps where the version counter of a name's tensor moved (since it got that tensor)."""

    origins: dict[int, Origin] = field(default_factory=dict)
    """Every step so far by index."""

    def remember(self, facts: StepFacts) -> None:
        """Note which names this step bound and whose version counter it moved."""
        here = Origin.of(facts.step)
        self.origins[here.index] = here
        for name, record in facts.tensors.items():
            if name in facts.new_names:
                self.bound_at[name] = here
                self.version_moves[name] = []
            elif record.version > facts.before[name].version:
                self.version_moves.setdefault(name, []).append(here)


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
        kept = [n for n in f.tensors if n in f.before and n not in f.new_names]
        return [note for name in kept for rule in rules for note in rule(f, name)]

    run.__name__ = "each_kept_name(" + ", ".join(r.__name__ for r in rules) + ")"
    return run


def note(kind: str, text: str, tensors: Sequence[str] = (), severity: Severity = "info", op: int | None = None) -> Note:
    """A Note (names deduplicated, in order); ``op``: the operation of the step it is about."""
    return Note(kind=kind, severity=severity, text=text, tensors=tuple(dict.fromkeys(tensors)), op=op)


def names_text(names: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    names = list(names)
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


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
