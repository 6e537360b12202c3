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


def _bar(start: int, end: int, total: int, width: int, char: str) -> str:
    if total <= 0:
        return ""
    a = int(start * width / total)
    b = max(a + 1, round(end * width / total)) if end > start else a
    return " " * a + char * (b - a) + " " * (width - b)


def memory_map(step: Step, width: int = 80) -> RenderableType:
    """A picture of every storage a name uses after ``step``."""
    storages: dict[str, list[tuple[str, TensorRecord]]] = {}
    for name, r in step.tensors.items():
        storages.setdefault(r.storage, []).append((name, r))
        if r.grad is not None:
            storages.setdefault(r.grad.storage, []).append((f"{name}.grad", r.grad))
    if not storages:
        return Text("")
    name_w = max(7, min(18, max(len(n) for group in storages.values() for n, _ in group) + 3))
    bar_w = max(10, width - name_w - 26)
    lines: list[RenderableType] = []
    for label, group in sorted(storages.items(), key=lambda kv: int(kv[0][1:]) if kv[0][1:].isdigit() else 0):
        first = group[0][1]
        total = first.storage_nbytes
        head = Text(f"  {label:<{name_w - 2}}", style="bold")
        head.append("[" + "█" * bar_w + "]", style="blue")
        head.append(f" {total:,} B {first.device}", style="dim")
        lines.append(head)
        seen: set[str] = set()
        for name, r in group:
            if name in seen:
                continue
            seen.add(name)
            start, end, strided = span(r)
            char = "▒" if strided else "█"
            row = Text(f"  {name:<{name_w - 2}}", style="cyan")
            row.append(" " + _bar(start, end, total, bar_w, char) + " ", style="yellow" if strided else "green")
            row.append(f" bytes {start}–{end}" + (" strided" if strided else ""), style="dim")
            lines.append(row)
        for aname, a in step.arrays.items():
            if a.storage == label:
                row = Text(f"  {aname:<{name_w - 2}}", style="cyan")
                row.append(" (NumPy array on this storage)", style="dim")
                lines.append(row)
    return Group(Text("  memory:", style="bold"), *lines)
