"""What each table column shows for a tensor record, shared by table and markdown."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tcopy_cli.trace.records import ArrayRecord, Step, TensorRecord

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


def tensor_cells(name: str, r: TensorRecord) -> dict[str, str]:
    """Text of every column for one tensor."""
    storage = r.storage if r.storage_offset == 0 else f"{r.storage}+{r.storage_offset}"
    return {
        "name": name,
        "values": short_preview(r.preview),
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
        "grad": short_preview(r.grad.preview, 32) if r.grad is not None else "-",
        "version": str(r.version),
    }


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

    def marker(self, shown: set[str] | None = None) -> str:
        """``+`` for a new name, ``~`` for a row with a changed (shown) cell, blank otherwise."""
        if self.new:
            return "+"
        changed = self.changed if shown is None else self.changed & shown
        return "~" if changed else " "


def step_rows(
    step: Step, previous: Step | None, watch: Sequence[str] | None = None, only_changed: bool = False
) -> list[Row]:
    """Rows for a step, compared with the previous step's rows."""
    before: dict[str, dict[str, str]] = {}
    if previous is not None:
        before = {n: tensor_cells(n, r) for n, r in previous.tensors.items()}
        before.update({n: array_cells(n, a) for n, a in previous.arrays.items()})
    rows: list[Row] = []
    current = [(n, tensor_cells(n, r)) for n, r in step.tensors.items()]
    current += [(n, array_cells(n, a)) for n, a in step.arrays.items()]
    for name, cells in current:
        if watch and not any(_watched(name, w) for w in watch):
            continue
        old = before.get(name)
        new = old is None and previous is not None
        changed = frozenset() if old is None else frozenset(k for k, v in cells.items() if old.get(k) != v)
        if only_changed and not new and not changed and previous is not None:
            continue
        rows.append(Row(cells, new or (previous is None), changed))
    return rows


def removed_names(step: Step, previous: Step | None) -> list[str]:
    """Names that held a tensor or array before this step and no longer do."""
    if previous is None:
        return []
    now = set(step.tensors) | set(step.arrays)
    return [n for n in list(previous.tensors) + list(previous.arrays) if n not in now]


def _watched(name: str, watch: str) -> bool:
    return name == watch or name.startswith(watch + "[") or name.startswith(watch + ".")
