"""Stable labels for what torch gives no name: storages (S1, G1 ...) and version counters (V1 ...);
the memory that storages, tensors and arrays cover."""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from tcopy_cli.trace.compat import storage_objects_preserved
from tcopy_cli.trace.layout import byte_span


def _storage_key(t: torch.Tensor) -> int | None:
    """The address of the C++ storage behind ``t``, or None where it has none."""
    try:
        return int(t.untyped_storage()._cdata)
    except (RuntimeError, NotImplementedError, AttributeError):
        return None


@dataclass
class _MemoryEntry:
    """A storage known by its C++ object's address (torch without stable storage objects)."""

    label: str
    span: tuple[str, int, int]  # (device, start, end)
    # Tensors seen on the storage: while one lives and still uses it, the storage lives.
    tensors: list[weakref.ref[torch.Tensor]]


class StorageLabels:
    """Stable labels S1, S2 ... for storages, in order of first appearance in a run.

    Where torch keeps one Python object per storage (2.2 on, see
    ``compat.storage_objects_preserved``), the object lives exactly as long as the
    storage itself, so a weak reference tells when a storage is freed; its label is then
    retired and a new storage at the same address gets a new label. Two storage objects
    over the same memory (``torch.from_numpy(t.numpy())``) get the same label.

    A storage first seen as a gradient (``x.grad``) is labelled G1, G2 ... from a count of
    its own: the table shows gradients by value, not by storage, and a gradient taking the
    next S number would leave a gap in the labels the table does show (S1, S2, S4).
    A name later bound to that storage (``g = x.grad``) shows its G label.

    The references have no callbacks: Python code run while memory is freed would
    swallow a signal's exception (Ctrl-C, --timeout) raised during it. Dead entries are
    found and dropped when a new storage is labelled.

    Older torch (2.1) makes a new Python object on each ``untyped_storage()`` call, and
    a weak reference to one crashes the interpreter when collected. There a storage is
    known by the address of its C++ object, which a new storage may reuse once the old
    one is freed, so liveness comes from weak references to the tensors seen on it: an
    entry stands while one of them lives and still uses that storage, or while a named
    array views its memory (``begin_step``). A storage that outlives every tensor tcopy
    saw on it (held only by unnamed objects) gets a new label if it comes back.
    """

    def __init__(self) -> None:
        # id(storage) -> (weak reference, label, (device, start, end))
        self._entries: dict[int, tuple[weakref.ref[Any], str, tuple[str, int, int]]] = {}
        self._count = {"S": 0, "G": 0}
        self._by_object = storage_objects_preserved()
        # (C++ storage address, device) -> entry, where storage objects aren't preserved
        self._memory: dict[tuple[int, str], _MemoryEntry] = {}
        self._held: list[tuple[int, int]] = []

    def begin_step(self, held: Iterable[tuple[int, int]]) -> None:
        """Note the [start, end) byte ranges of named arrays: memory an array views is alive."""
        self._held = [span for span in held if span[0] < span[1]]

    def label(self, storage: Any, tensor: torch.Tensor | None = None, grad: bool = False) -> str:
        """The label of ``storage`` (a torch.UntypedStorage), ``tensor``'s storage (a gradient's if ``grad``)."""
        prefix = "G" if grad else "S"
        if not self._by_object and tensor is not None:
            return self._label_by_memory(storage, tensor, prefix)
        key = id(storage)
        entry = self._entries.get(key)
        if entry is not None and entry[0]() is storage:
            return entry[1]
        self._entries = {k: e for k, e in self._entries.items() if e[0]() is not None}
        span = _span_of(storage)
        # Spans are read now: a storage resized in place since it was labelled has moved.
        known = ((e[1], _span_of(st) if (st := e[0]()) is not None else e[2]) for e in self._entries.values())
        label = self._contained(span, known) or self._new_label(prefix)
        self._entries[key] = (weakref.ref(storage), label, span)
        return label

    def _label_by_memory(self, storage: Any, tensor: torch.Tensor, prefix: str) -> str:
        key = (int(storage._cdata), str(storage.device))
        entry = self._memory.get(key)
        if entry is not None and self._alive(key, entry):
            if not any(ref() is tensor for ref in entry.tensors):
                entry.tensors.append(weakref.ref(tensor))
            return entry.label
        self._memory = {k: e for k, e in self._memory.items() if self._alive(k, e)}
        span = _span_of(storage)
        for e in self._memory.values():  # a storage resized in place since it was labelled has moved
            if e.tensors and (t := e.tensors[0]()) is not None:
                e.span = _span_of(t.untyped_storage())
        known = ((e.label, e.span) for e in self._memory.values())
        label = self._contained(span, known) or self._new_label(prefix)
        self._memory[key] = _MemoryEntry(label, span, [weakref.ref(tensor)])
        return label

    def forget(self, obj: Any) -> None:
        """Hold no weak reference to tensor ``obj`` any more (its storage's label stays with the others)."""
        for entry in self._memory.values():
            entry.tensors = [ref for ref in entry.tensors if ref() is not obj]

    def _alive(self, key: tuple[int, str], entry: _MemoryEntry) -> bool:
        """True while the storage of ``entry`` surely still exists (dead references are dropped)."""
        entry.tensors = [ref for ref in entry.tensors if (t := ref()) is not None and _storage_key(t) == key[0]]
        _, start, end = entry.span
        return bool(entry.tensors) or any(start <= lo and hi <= end for lo, hi in self._held)

    @staticmethod
    def _contained(span: tuple[str, int, int], known: Iterable[tuple[str, tuple[str, int, int]]]) -> str | None:
        """The label of a known storage whose memory holds ``span`` (same memory, other object)."""
        device, start, end = span
        return next(
            (lab for lab, (dev, s0, s1) in known if dev == device and s0 <= start and end <= s1 and start),
            None,
        )

    def _new_label(self, prefix: str) -> str:
        self._count[prefix] += 1
        return f"{prefix}{self._count[prefix]}"


class VersionLabels:
    """Stable labels V1, V2 ... for version counters, in order of first appearance in a run.

    torch exposes no identity for a version counter, only whether two tensors share one
    (``graph.version_groups``' probe). A tensor keeps its counter for life (even through
    ``x.data = ...``), so a label follows the tensors that carried it: a group of tensors
    sharing a counter takes the label of a member seen before (a weak reference that still
    points at the same object), else a new one. ``t.detach()`` thus shows ``t``'s label,
    ``t.data`` a new one.
    """

    def __init__(self) -> None:
        self._seen: dict[int, tuple[weakref.ref[torch.Tensor], str]] = {}
        self._count = 0

    def forget(self, obj: Any) -> None:
        """Hold no weak reference to ``obj`` any more (``torch.utils.swap_tensors`` refuses a tensor that has one)."""
        entry = self._seen.get(id(obj))
        if entry is not None and entry[0]() is obj:
            del self._seen[id(obj)]

    def assign(self, tensors: list[tuple[str, torch.Tensor]], shares: dict[str, list[str]]) -> dict[str, str]:
        """name -> label for this step's tensors (``shares``: names sharing each one's counter)."""
        seen = self._seen
        if len(seen) > 2 * len(tensors) + 64:  # forget dead tensors now and then, not every step
            seen = self._seen = {k: e for k, e in seen.items() if e[0]() is not None}
        by_name = dict(tensors)
        out: dict[str, str] = {}
        used: set[str] = set()
        for name, _ in tensors:
            if name in out:
                continue
            group = [name, *(n for n in shares.get(name, []) if n not in out)]
            known = None
            for n in group:
                entry = seen.get(id(by_name[n]))
                if entry is not None and entry[0]() is by_name[n] and entry[1] not in used:
                    known = entry[1]
                    break
            if known is None:
                self._count += 1
                known = f"V{self._count}"
            used.add(known)
            for n in group:
                out[n] = known
                obj = by_name[n]
                entry = seen.get(id(obj))
                if entry is not None and entry[1] == known and entry[0]() is obj:
                    continue  # already remembered under this label
                try:
                    seen[id(obj)] = (weakref.ref(obj), known)
                except TypeError:  # pragma: no cover - tensors take weak references
                    pass
        return out


def _span_of(storage: Any) -> tuple[str, int, int]:
    start = int(storage.data_ptr())
    return str(storage.device), start, start + int(storage.nbytes())


def tensor_span(t: torch.Tensor) -> tuple[int, int]:
    """[start, end) byte addresses a tensor's elements cover (start == end if empty)."""
    ptr = t.data_ptr()  # already includes the storage offset
    start, end = byte_span(t.shape, t.stride(), 0, t.element_size())
    return ptr + start, ptr + end


def array_span(a: np.ndarray) -> tuple[int, int]:
    try:
        from numpy.lib.array_utils import byte_bounds
    except ImportError:  # numpy < 2
        byte_bounds = np.byte_bounds  # type: ignore[attr-defined]
    if a.size == 0:
        p = int(a.__array_interface__["data"][0])
        return p, p
    lo, hi = byte_bounds(a)
    return int(lo), int(hi)
