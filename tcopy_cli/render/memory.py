"""The storage map (--memory): one bar per storage, each name drawn over the bytes it covers.

Spans come from the records' storage_offset, shape, stride and element size, so
overlapping spans show at a glance which writes are visible through which names.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from tcopy_cli.trace.layout import is_row_major
from tcopy_cli.trace.records import Step, TensorRecord


def span(r: TensorRecord) -> tuple[int, int, bool]:
    """(first byte, end byte, strided?) of a tensor inside its storage.

    Strided: not laid out row-major (a transpose, a column, a step slice), even when it
    happens to cover its whole span.
    """
    start, end = r.byte_span()
    return start, end, start != end and not is_row_major(r.shape, r.stride)


def _bar(start: int, end: int, scale: float, char: str, most: int) -> str:
    """Byte span [start, end) as a bar, ``scale`` characters a byte (at least one character), cut at
    ``most`` characters (a span past its storage comes only from records a worker made up)."""
    a = min(max(int(start * scale), 0), most)
    b = min(max(a + 1, round(end * scale)) if end > start else a, most + 1)
    return " " * a + char * (b - a)


def byte_range(start: int, end: int) -> str:
    """``bytes 0–23``: the first and the last byte covered (inclusive), or ``no bytes``."""
    return f"bytes {start}–{end - 1}" if end > start else "no bytes"


def _storages(step: Step) -> dict[str, list[tuple[str, TensorRecord]]]:
    storages: dict[str, list[tuple[str, TensorRecord]]] = {}
    for name, r in step.tensors.items():
        storages.setdefault(r.storage, []).append((name, r))
        if r.grad is not None:
            storages.setdefault(r.grad.storage, []).append((f"{name}.grad", r.grad))
    return storages


def _label_order(item: tuple[str, object]) -> tuple[int, int]:
    """S labels first, then G (gradient) labels, each by number."""
    label = item[0]
    return (label[:1] != "S", int(label[1:]) if label[1:].isdigit() else 0)


def memory_signature(step: Step) -> tuple[object, ...]:
    """Everything the map draws: two steps with equal signatures draw the same map."""
    return (
        tuple(
            (label, r.storage_nbytes, r.device, name, span(r))
            for label, group in _storages(step).items()
            for name, r in group
        ),
        tuple((n, a.storage) for n, a in step.arrays.items()),
    )


def memory_map(step: Step, width: int = 80) -> RenderableType:
    """A picture of every storage a name uses after ``step``.

    Bars share one scale, so a storage twice the bytes draws twice as long; names are
    drawn over the bytes they cover.
    """
    storages = _storages(step)
    if not storages:
        return Text("")
    name_w = max(7, min(18, max(len(n) for group in storages.values() for n, _ in group) + 3))
    bar_w = max(10, width - name_w - 26)
    largest = max(group[0][1].storage_nbytes for group in storages.values())
    scale = bar_w / largest if largest > 0 else 0.0
    lines: list[RenderableType] = []
    for label, group in sorted(storages.items(), key=_label_order):
        first = group[0][1]
        total = first.storage_nbytes
        head = Text(f"  {label:<{name_w - 2}}", style="bold")
        head.append("[" + _bar(0, total, scale, "█", bar_w) + "]", style="blue")
        head.append(f" {total:,} B {first.device}", style="dim")
        lines.append(head)
        seen: set[str] = set()
        for name, r in group:
            if name in seen:
                continue
            seen.add(name)
            start, end, strided = span(r)
            char = "▒" if strided else "█"
            row = Text(f"  {name:<{name_w - 2}} ", style="cyan")
            row.append(_bar(start, end, scale, char, bar_w), style="yellow" if strided else "green")
            row.append(f"  {byte_range(start, end)}" + (" strided" if strided else ""), style="dim")
            lines.append(row)
        for aname, a in step.arrays.items():
            if a.storage == label:
                row = Text(f"  {aname:<{name_w - 2}}", style="cyan")
                row.append(" (NumPy array on this storage)", style="dim")
                lines.append(row)
    return Group(Text("  memory:", style="bold"), *lines)
