"""What each table column shows for a tensor record, shared by table and markdown."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from tcopy_cli.render.memo import Memo
from tcopy_cli.render.values import preview_statistics, summary_line
from tcopy_cli.trace.records import ArrayRecord, Step, TensorRecord
from tcopy_cli.trace.values import one_line

PREVIEW_WIDTH = 48


@dataclass(frozen=True)
class Column:
    """One column: header, key into the row dict, and whether it is kept when narrow."""

    header: str
    key: str
    narrow: bool = True

    wide: bool = True


# Every fact, for wide terminals, Markdown and files.
COLUMNS: list[Column] = [
    Column("name", "name"),
    Column("values", "values"),
    Column("shape", "shape"),
    Column("dtype", "dtype"),
    Column("device", "device"),
    Column("data_ptr", "data_ptr", narrow=False),
    Column("storage", "storage"),
    Column("shares", "shares", narrow=False),
    Column("req_grad", "requires_grad", narrow=False),
    Column("leaf", "is_leaf", narrow=False),
    Column("grad_fn", "grad_fn", narrow=False),
    # Narrow terminals: requires_grad, is_leaf and grad_fn in one column.
    Column("autograd", "autograd", wide=False),
    Column("grad", "grad"),
    Column("ver", "version"),
]


def yes_no(flag: bool) -> str:
    """Booleans as words that read well without colour."""
    return "yes" if flag else "no"


def short_preview(text: str, width: int = PREVIEW_WIDTH) -> str:
    """Cut a preview to ``width`` characters with an ellipsis."""
    return text if len(text) <= width else text[: width - 1] + "…"


def autograd_summary(r: TensorRecord) -> str:
    """One word for requires_grad / is_leaf / grad_fn: 'no grad', 'leaf+grad' or the grad_fn."""
    if not r.requires_grad:
        return "no grad"
    if r.is_leaf:
        return "leaf+grad"
    return r.grad_fn or "non-leaf"


def _values_text(r: TensorRecord) -> str:
    """The preview, or for a large tensor whose preview is too long its statistics in one line."""
    if r.values is None and len(r.preview) > PREVIEW_WIDTH and preview_statistics(r.preview):
        return summary_line(r)
    return short_preview(r.preview)


def tensor_cells(name: str, r: TensorRecord) -> dict[str, str]:
    """Text of every column for one tensor."""
    storage = r.storage if r.storage_offset == 0 else f"{r.storage}+{r.storage_offset}"
    return {
        "name": name,
        "values": _values_text(r),
        "shape": "(" + ", ".join(str(d) for d in r.shape) + ("," if len(r.shape) == 1 else "") + ")",
        "dtype": r.dtype,
        "device": r.device,
        "data_ptr": hex(r.data_ptr),
        "storage": storage,
        "shares": ", ".join(r.shares_memory_with) or "-",
        "requires_grad": yes_no(r.requires_grad),
        "is_leaf": yes_no(r.is_leaf),
        "grad_fn": r.grad_fn or "-",
        "autograd": autograd_summary(r),
        "grad": _values_text(r.grad) if r.grad is not None else "-",
        "version": version_text(r),
    }


def version_text(r: TensorRecord) -> str:
    """``V1:0``: the version counter's label (shared by tensors sharing it) and its value."""
    if not r.version_counter or r.version_counter == "-":
        return str(r.version)
    return f"{r.version_counter}:{r.version}"


def array_cells(name: str, a: ArrayRecord) -> dict[str, str]:
    """Text of every column for a NumPy array (autograd columns empty)."""
    return {
        "name": name,
        "values": short_preview(a.preview),
        "shape": "(" + ", ".join(str(d) for d in a.shape) + ("," if len(a.shape) == 1 else "") + ")",
        "dtype": f"np.{a.dtype}",
        "device": "cpu",
        "data_ptr": hex(a.data_ptr),
        "storage": a.storage or "-",
        "shares": ", ".join(a.shares_memory_with) or "-",
        "requires_grad": "",
        "is_leaf": "",
        "grad_fn": "",
        "autograd": "numpy",
        "grad": "",
        "version": "",
    }


@dataclass(frozen=True)
class Row:
    """A table row with its change status relative to the previous step."""

    cells: dict[str, str]
    new: bool
    changed: frozenset[str]
    """Columns whose fact changed since the previous step (whether shown or not)."""
    record: TensorRecord | ArrayRecord | None = None
    facts: dict[str, object] = field(default_factory=dict)
    """What each column stands for, in full (``tensor_facts``): the cells are cut down, the facts not."""
    members: tuple[str, ...] = ()
    """A module's row (``render.modules``): the names of the tensors it stands for."""

    @property
    def names(self) -> tuple[str, ...]:
        """The names the row stands for: its own, or a module row's tensors."""
        return self.members or (self.cells["name"],)

    def marker(self) -> str:
        """``+`` for a new name, ``~`` when one of the tensor's own facts changed, blank otherwise.

        The mark depends on the facts only, never on which columns the width leaves
        visible, so it is the same at every width and in Markdown.
        """
        if self.new:
            return "+"
        return "~" if self.changed else " "


def _grad_facts(g: TensorRecord | None) -> object:
    return None if g is None else (_values_fact(g), g.shape, g.dtype, g.data_ptr, g.storage, g.storage_offset)


_REPRS: Memo[str] = Memo()


def _values_fact(r: TensorRecord | ArrayRecord) -> object:
    # Listed values when there are few enough; else the preview, which carries the
    # statistics of the whole tensor (and its first values). The text of a values list is
    # remembered for that list object (an unchanged tensor keeps it from step to step).
    values = r.values
    if values is None:
        return r.preview
    return _REPRS.get(id(values), repr, values, owner=values)


def tensor_facts(r: TensorRecord) -> dict[str, object]:
    """What each column stands for, as facts to compare between steps (not the cut-down cell text).

    ``shares`` is left out: it names other tensors, so it changes when another name is
    bound or deleted while this tensor stays the same.
    """
    return {
        "values": _values_fact(r),
        "shape": tuple(r.shape),
        "dtype": r.dtype,
        "device": r.device,
        "data_ptr": r.data_ptr,
        "storage": (r.storage, r.storage_offset),
        "requires_grad": r.requires_grad,
        "is_leaf": r.is_leaf,
        "grad_fn": r.grad_fn,
        "autograd": (r.requires_grad, r.is_leaf, r.grad_fn),
        "grad": _grad_facts(r.grad),
        "version": (r.version_counter, r.version),
    }


def array_facts(a: ArrayRecord) -> dict[str, object]:
    """The facts of a NumPy array row (see ``tensor_facts``)."""
    return {
        "values": _values_fact(a),
        "shape": tuple(a.shape),
        "dtype": a.dtype,
        "data_ptr": a.data_ptr,
        "storage": a.storage,
    }


_TENSOR_NAMED: Memo[tuple[dict[str, str], dict[str, object], TensorRecord]] = Memo()
"""Cells and facts by name and record: a step that carries the same record object again (an
unchanged tensor travels from the worker as a reference) reuses them."""


def _tensor_named(name: str, r: TensorRecord) -> tuple[dict[str, str], dict[str, object], TensorRecord]:
    return (tensor_cells(name, r), tensor_facts(r), r)


def _named(step: Step) -> dict[str, tuple[dict[str, str], dict[str, object], TensorRecord | ArrayRecord]]:
    named: dict[str, tuple[dict[str, str], dict[str, object], TensorRecord | ArrayRecord]] = {
        n: _TENSOR_NAMED.get((n, id(r)), _tensor_named, n, r, owner=r) for n, r in step.tensors.items()
    }
    named.update({n: (array_cells(n, a), array_facts(a), a) for n, a in step.arrays.items()})
    return named


_LAST_NAMED: list[tuple[Step, dict[str, tuple[dict[str, str], dict[str, object], TensorRecord | ArrayRecord]]]] = []


def _named_once(step: Step) -> dict[str, tuple[dict[str, str], dict[str, object], TensorRecord | ArrayRecord]]:
    """``_named(step)``; the last step's is kept, since it is the next step's previous."""
    if _LAST_NAMED and _LAST_NAMED[0][0] is step:
        return _LAST_NAMED[0][1]
    named = _named(step)
    _LAST_NAMED[:] = [(step, named)]
    return named


def step_rows(
    step: Step, previous: Step | None, watch: Sequence[str] | None = None, only_changed: bool = False
) -> list[Row]:
    """Rows for a step, compared with the previous step's facts."""
    before = _named_once(previous) if previous is not None else {}
    rows: list[Row] = []
    for name, (cells, facts, record) in _named_once(step).items():
        if watch and not any(_watched(name, w) for w in watch):
            continue
        old = before.get(name)
        new = old is None and previous is not None
        changed = (
            frozenset()
            if old is None or old[2] is record
            else frozenset(k for k, v in facts.items() if old[1].get(k, v) != v)
        )
        if only_changed and not new and not changed and previous is not None:
            continue
        rows.append(Row(cells, new or (previous is None), changed, record, facts))
    return rows


T = TypeVar("T")


class Before(Generic[T]):
    """What a step compares with (the step itself for change marks, or what --watch took from
    it): that of the last step before it at its call depth or shallower.

    A statement that called a script function compares with the state before it began,
    not with the function's last statement: its marks show what the call changed (under
    ``--depth`` the function's own steps are not drawn), and the function's locals are not
    listed as removed. Steps at one depth compare with the one before, drawn or not.
    """

    def __init__(self) -> None:
        self._stack: list[tuple[int, T]] = []  # call depths strictly increasing: one per depth

    def of(self, depth: int) -> T | None:
        """What a step at call depth ``depth`` compares with (None: nothing before it)."""
        for d, value in reversed(self._stack):
            if d <= depth:
                return value
        return None

    def add(self, depth: int, value: T) -> None:
        """A step at ``depth`` ran: deeper steps and the last one of its depth are behind it."""
        while self._stack and self._stack[-1][0] >= depth:
            self._stack.pop()
        self._stack.append((depth, value))

    def clear(self) -> None:
        """Start over: the next step compares with nothing."""
        self._stack.clear()


def removed_names(step: Step, previous: Step | None) -> list[str]:
    """Names that held a tensor or array before this step and no longer do (none where the
    step looked at nothing: its empty records do not say the names went)."""
    if previous is None or not step.observed:
        return []
    now = set(step.tensors) | set(step.arrays)
    return [n for n in list(previous.tensors) + list(previous.arrays) if n not in now]


def _watched(name: str, watch: str) -> bool:
    return name == watch or name.startswith(watch + "[") or name.startswith(watch + ".")


DEFINITION = re.compile(r"(class|def)\s+([A-Za-z_][A-Za-z0-9_]*)")


@dataclass(frozen=True)
class Quiet:
    """How a step in which no shown tensor changed is told, without redrawing its table."""

    one_line: str | None
    """A definition or import step in one line (``defines class MLP``), a one-line statement
    that changed nothing and said nothing (``opt.zero_grad()``), or None."""
    told: bool
    """"(no tensor changed)" stands for the step's table (for a statement's one line: where it
    does not fit the width and the step is told in full)."""
    says_unchanged: bool = False
    """The one line is followed by `` · no tensor changed`` (``ViewOptions.unchanged_text``):
    a statement that left the tensors there are as they were."""
    statement: bool = False
    """The one line is the statement itself: told in full instead where it does not fit."""


def quiet_form(step: Step, rows: Sequence[Row], gone: Sequence[str], drawn: bool = True) -> Quiet:
    """Whether (and how) a step is told without its table: only when nothing it shows changed.

    ``drawn``: a table was drawn before, which the step's would repeat. Until then a step
    that changed nothing and printed nothing still draws its table (the first step a
    ``--step``/``--from`` selection shows, say): the reader has not seen the tensors yet.
    """
    unchanged = step.error is None and not gone and not any(r.new or r.changed for r in rows)
    if not unchanged:
        return Quiet(None, False)
    if not step.stdout and step.value is None:
        m = DEFINITION.match(step.source)
        if m:
            return Quiet(f"defines {'class' if m[1] == 'class' else 'function'} {m[2]}", False)
        if step.source.startswith(("import ", "from ")) and "\n" not in step.source:
            return Quiet(step.source, False)
        has = bool(step.tensors or step.arrays)
        line = one_line(step.source)
        if line is not None and not (step.warnings or step.explanations or step.hooks) and (drawn or not has):
            return Quiet(line, drawn, says_unchanged=has, statement=True)
        return Quiet(None, drawn)
    return Quiet(None, True)
