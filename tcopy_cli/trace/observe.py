"""Turn the script's namespace into records without changing what the script computes.

Rules: read under ``torch.no_grad()`` from ``detach()``ed aliases (no autograd
history, no version bumps); read ``.grad`` only where torch would not warn; copy to
the host only small tensors or a bounded slice (large tensors are summarised with
reductions on their device); keep no strong reference to any tensor or storage.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from tcopy_cli.limits import DEFAULT_MAX_VALUES
from tcopy_cli.trace.graph import (
    GraphWalk,
    SavedTensorTracker,
    build_graph,
    grad_of,
    node_id,
    safe_grad_fn,
    safe_is_leaf,
    version_groups,
)
from tcopy_cli.trace.labels import StorageLabels, VersionLabels, array_span, tensor_span
from tcopy_cli.trace.layout import byte_span
from tcopy_cli.trace.names import Walked, walk_names
from tcopy_cli.trace.records import (
    ArrayRecord,
    GraphRecord,
    SavedEvent,
    TensorRecord,
)
from tcopy_cli.trace.steady import Steady, place
from tcopy_cli.trace.summary import PREVIEW_ITEMS, content_key, tensor_values
from tcopy_cli.trace.unchanged import Unchanged
from tcopy_cli.trace.unlisted import unlisted_bytes
from tcopy_cli.trace.values import format_nested, format_number, json_values

_NO_STORAGE = "no-storage:"
"""The label of a tensor torch gives no storage (sparse, some wrapper subclasses), before its id."""
_VALUES_CACHE_SIZE = 4096


@dataclass(frozen=True)
class Snapshot:
    """The state after a step, as plain data."""

    tensors: dict[str, TensorRecord]
    arrays: dict[str, ArrayRecord]
    total_bytes: int
    saved_events: list[SavedEvent]
    graph: GraphRecord | None = None
    unlisted: dict[str, int] = field(default_factory=dict)
    """Containers whose items were not all looked at (``iter_named``'s ``cut``)."""


class Observer:
    """Builds tensor and array records for a namespace after each step."""

    def __init__(self, max_values: int = DEFAULT_MAX_VALUES, graph: bool = False) -> None:
        self.max_values = max_values
        self.graph = graph
        self.labels = StorageLabels()
        self.versions = VersionLabels()
        self.saved = SavedTensorTracker()
        self.read_saved = True
        """Read the tensors autograd saved for backward after each step. Off once the script packs them
        through hooks (``saved_tensors_hooks``, ``register_hooks``, checkpointing): reading one would run
        the script's unpack hook, changing what it prints and computes."""
        self._values_cache: dict[tuple[Any, ...], tuple[Any, str]] = {}
        self.unchanged = Unchanged()
        """The large tensors' summaries, made again only where something may have written them."""
        self.saved.unwritten, self.saved.unseen = self.unchanged.unwritten, self.unchanged.unseen
        # The last record made under each name, with what it was made from: a tensor whose
        # facts all read the same as then gets that same record object again.
        self._previous: dict[str, tuple[tuple[Any, ...], TensorRecord]] = {}
        self.steady = Steady()
        """The last step's names and storages: a step that kept them all keeps its relations."""

    def forget(self, *objs: Any) -> None:
        """Hold no weak reference to these tensors (about to be swapped: ``torch.utils.swap_tensors``)."""
        for obj in objs:
            if isinstance(obj, torch.Tensor):
                self.labels.forget(obj)
                self.versions.forget(obj)
                self.unchanged.forget(obj)
        self.steady.reset()

    def snapshot(self, ns: dict[str, Any], walked: Walked | None = None) -> Snapshot:
        """Records for every tensor and array name, total bytes, and saved-tensor events.

        ``walked``: ``walk_names(ns)``, where the caller walked the names already.

        Observing runs torch on one CPU thread: its reductions are small (bounded
        samples), and waking the thread pool for each costs more than the work itself
        (measured: 8 ms per reduction with two threads on a busy machine, 0.1 ms with one).
        The count is set inside the ``try``: the --timeout alarm raises as soon as a call
        returns, and raised right after ``set_num_threads(1)`` it would leave the process
        (the Python API's caller, or the next run) on one thread for good.
        """
        threads = torch.get_num_threads()
        try:
            torch.set_num_threads(1)
            with warnings.catch_warnings(), torch.no_grad():
                warnings.simplefilter("ignore")
                named, cut, listed = walk_names(ns) if walked is None else walked
                snap = self._again(ns, named, cut, listed)
                if snap is None:
                    snap = self._snapshot(ns, named, cut, listed)
                    self.steady.remember(named, cut, listed, snap.tensors, len(snap.arrays))
            self.unchanged.step_done()
            return snap
        finally:
            torch.set_num_threads(threads)

    def _snapshot(
        self, ns: dict[str, Any], named: list[tuple[str, Any]], cut: dict[str, int], listed: set[int]
    ) -> Snapshot:
        self._memo: dict[tuple[Any, ...], tuple[Any, str]] = {}
        tensors: list[tuple[str, torch.Tensor]] = []
        arrays: list[tuple[str, np.ndarray]] = []
        for name, value in named:
            if isinstance(value, torch.Tensor):
                tensors.append((name, value))
            else:
                arrays.append((name, value))
        # Gradients take part in storage sharing as "name.grad".
        grads: dict[str, torch.Tensor] = {}
        for name, t in tensors:
            g = grad_of(t)
            if g is not None:
                grads[name] = g
        array_spans = {name: array_span(a) for name, a in arrays}
        self.labels.begin_step(array_spans.values())
        members: list[tuple[str, torch.Tensor]] = tensors + [(f"{n}.grad", g) for n, g in grads.items()]
        storage_of: dict[str, str] = {}
        nbytes_of: dict[str, int] = {}
        storage_span: dict[str, tuple[int, int]] = {}
        counted: set[int] = set()  # data pointers of the storages in the total
        for i, (name, t) in enumerate(members):
            label, nbytes, base = self._storage(t, grad=i >= len(tensors))
            storage_of[name] = label
            nbytes_of[label] = nbytes
            if not label.startswith(_NO_STORAGE):
                counted.add(base)
            if t.device.type == "cpu":
                storage_span[label] = (base, base + nbytes)
        by_label: dict[str, list[str]] = {}
        for name, label in storage_of.items():
            by_label.setdefault(label, []).append(name)

        def sharing(name: str) -> list[str]:
            return [n for n in by_label.get(storage_of[name], []) if n != name]

        # Graph facts: what each tensor's backward reaches, shared version counters,
        # and changes to tensors the graph saved.
        walk = GraphWalk()
        reach = {name: walk.reach_from(t) for name, t in tensors}
        node_of = {name: node_id(t) for name, t in tensors}
        names_of_node: dict[int, list[str]] = {}
        for name, nid in node_of.items():
            names_of_node.setdefault(nid, []).append(name)
        # One group: a counter can be shared across storages (``w.data = ...`` keeps w's).
        shares_version = version_groups([tensors])
        events: list[SavedEvent] = []
        saved: list[torch.Tensor] = []  # the tensors the graph saved for backward, read once
        if self.read_saved and (walk.nodes or self.saved.entries):  # (no graph now, none tracked before: none)
            describe: dict[int, str] = {}
            for name, t in tensors:
                try:
                    ptr = t.untyped_storage().data_ptr()
                except (RuntimeError, NotImplementedError):
                    continue
                describe.setdefault(ptr, name)
            leaf_names = {node_of[n]: names_of_node[node_of[n]] for n, t in tensors if safe_grad_fn(t) is None}
            events, saved = self.saved.update(walk, describe, lambda nid: walk.leaves_behind(nid, leaf_names))

        counters = self.versions.assign(tensors, shares_version)
        records: dict[str, TensorRecord] = {}
        position = {name: i for i, (name, _) in enumerate(tensors)}
        previous, self._previous = self._previous, {}
        for name, t in tensors:
            grad_rec = None
            if name in grads:
                gname = f"{name}.grad"
                grad_rec = self._record(grads[name], storage_of[gname], sharing(gname), None, previous, gname)
            # In the order of the names, not of the set of node ids (which changes from run to run).
            reached = {n for nid in reach[name] for n in names_of_node.get(nid, []) if n != name}
            records[name] = self._record(
                t,
                storage_of[name],
                sharing(name),
                grad_rec,
                previous,
                name,
                shares_version_with=shares_version.get(name, []),
                version_counter=counters[name],
                reaches=sorted(reached, key=position.__getitem__),
                node_id=node_of[name],
                reach_ids=reach[name],
            )
        spans = (
            {name: tensor_span(t) for name, t in members if t.device.type != "meta" and _sizes_valid(t)}
            if arrays
            else {}
        )
        array_records: dict[str, ArrayRecord] = {}
        arrays_by_name = dict(arrays)
        members_by_name = dict(members)
        for name, a in arrays:
            lo, hi = array_spans[name]
            overlap = [
                n
                for n, (l2, h2) in list(spans.items()) + list(array_spans.items())
                if n != name and lo < h2 and l2 < hi and _shares(a, arrays_by_name.get(n), members_by_name.get(n))
            ]
            if a.size <= self.max_values:
                raw = a.tolist()
                values, preview = json_values(raw), format_nested(raw)
            else:
                flat = (
                    a.reshape(-1)[:PREVIEW_ITEMS].tolist() if a.flags.c_contiguous else a.flat[:PREVIEW_ITEMS].tolist()
                )
                values, preview = None, "[" + ", ".join(format_number(x) for x in flat) + ", …]"
            inside = [label for label, (s0, s1) in storage_span.items() if s0 <= lo and hi <= s1 and s0 < s1]
            array_records[name] = ArrayRecord(
                shape=list(a.shape),
                dtype=str(a.dtype),
                values=values,
                preview=preview,
                data_ptr=int(a.__array_interface__["data"][0]),
                shares_memory_with=overlap,
                storage=inside[0] if inside else None,
            )
        total = sum(nbytes_of.values()) + sum(
            a.nbytes for name, a in arrays if array_records[name].storage is None and a.base is None
        )
        total += unlisted_bytes(ns, walk, counted, saved, listed)
        graph = build_graph(walk, tensors, self.saved) if self.graph else None
        return Snapshot(records, array_records, total, events, graph, cut)

    def _again(
        self, ns: dict[str, Any], named: list[tuple[str, Any]], cut: dict[str, int], listed: set[int]
    ) -> Snapshot | None:
        """The snapshot within the last step's relations (``trace.steady``), or None where they may have
        changed. A tensor whose place, values and preview read as for its last record gets that record
        again (as ``_record`` would give it); the others a record made anew."""
        kept = None if self.graph else self.steady.again(named, cut, listed)
        if kept is None:
            return None
        self._memo = {}
        previous, self._previous = self._previous, {}
        records: dict[str, TensorRecord] = {}
        nbytes_of: dict[str, int] = {}
        counted: set[int] = set()
        for name, t, storage, k in kept:
            last, relations = previous.get(name), k.record
            nbytes_of[relations.storage] = int(storage.nbytes())
            counted.add(int(storage.data_ptr()))
            key = place(t, storage)
            if key == k.key and last is not None:
                try:
                    values, preview = self._values(t)
                except (RuntimeError, ValueError, TypeError, IndexError):
                    values, preview = None, None
                if values is last[1].values and preview == last[1].preview:
                    records[name], self._previous[name] = last[1], last
                    continue
            records[name] = self._record(
                t,
                relations.storage,
                relations.shares_memory_with,
                None,
                previous,
                name,
                shares_version_with=relations.shares_version_with,
                version_counter=relations.version_counter,
                reaches=relations.reaches,
                node_id=relations.node_id,
                reach_ids=relations.reach_ids,
            )
            k.key = key if _sizes_valid(t) and _fits_storage(t) else None
        total = sum(nbytes_of.values()) + unlisted_bytes(ns, GraphWalk(), counted, [], listed)
        return Snapshot(records, {}, total, [], None, cut)

    def _values(self, d: torch.Tensor) -> tuple[Any, str]:
        """``tensor_values`` of ``d``, from memory when a small CPU tensor holds the same bytes as before.

        The key is the content itself (dtype, shape and the elements' bytes in order), not
        the version counter, so a write that bumps no version (through ``.data`` or a NumPy
        view) still shows: only turning the same bytes into lists and text is saved.
        """
        key = content_key(d, self.max_values)
        if key is None:
            return self.unchanged.summary(d, lambda: tensor_values(d.detach(), self.max_values))
        found = self._values_cache.get(key)
        if found is None:
            if len(self._values_cache) >= _VALUES_CACHE_SIZE:
                self._values_cache.clear()
            found = self._values_cache[key] = tensor_values(d.detach(), self.max_values)
        return found

    def _storage(self, t: torch.Tensor, grad: bool = False) -> tuple[str, int, int]:
        """(label, bytes, base address) of a tensor's storage (``grad``: a gradient's)."""
        try:
            st = t.untyped_storage()
            base = int(st.data_ptr())  # a wrapper subclass (MaskedTensor) has a storage with no memory
        except (RuntimeError, NotImplementedError):
            return f"{_NO_STORAGE}{id(t)}", 0, 0
        return self.labels.label(st, t, grad), int(st.nbytes()), base

    def _record(
        self,
        t: torch.Tensor,
        storage: str,
        shares: list[str],
        grad: TensorRecord | None,
        previous: dict[str, tuple[tuple[Any, ...], TensorRecord]],
        name: str,
        **graph: Any,
    ) -> TensorRecord:
        """The record of one tensor; ``graph``: the facts that relate it to the others (names only).

        ``previous``: the last step's records by name. Where every fact reads as it did for
        the record made under ``name`` then (and the values are the same object, which
        ``_values`` gives for the same content), that record is used again: unchanged
        tensors cost a comparison, and travel to the parent as a reference.
        """
        shape = t.shape
        valid = _sizes_valid(t)
        # Aliases of one view (a, a.detach(), a.data ...) are summarised once per step.
        key = (
            (storage, t.data_ptr(), tuple(shape), tuple(t.stride()), t.dtype)
            if valid and t.numel() > self.max_values
            else None
        )
        if not valid:
            # torch 2.1's resize_ with a negative size fails after setting it: the tensor
            # can't even count its elements, let alone be read.
            values, preview = None, "<not read: the tensor has a negative size (left by a failed resize_)>"
        elif key is not None and key in self._memo:
            values, preview = self._memo[key]
        elif _fits_storage(t):
            try:
                values, preview = self._values(t)
            except (RuntimeError, ValueError, TypeError, IndexError) as exc:
                values, preview = None, f"<values unreadable: {type(exc).__name__}>"
        else:
            # A failed resize_ can leave sizes larger than the memory behind them; torch
            # itself would read past the end here, so tcopy does not read at all.
            values, preview = None, "<not read: the tensor's sizes exceed its storage>"
        if key is not None:
            self._memo[key] = (values, preview)
        try:
            version = int(t._version)
        except RuntimeError:  # inference tensors have no version counter
            version = -1
        try:
            ptr = int(t.data_ptr())
        except RuntimeError:
            ptr = 0
        try:
            nbytes = int(t.untyped_storage().nbytes())
        except (RuntimeError, NotImplementedError):
            nbytes = 0
        if version < 0 and "version_counter" in graph:
            graph["version_counter"] = "-"
        grad_fn = _grad_fn_name(t)
        offset, stride = int(t.storage_offset()), tuple(t.stride())
        requires_grad, is_leaf = bool(t.requires_grad), safe_is_leaf(t)
        facts = (
            id(t),
            tuple(shape),
            t.dtype,
            t.device,
            preview,
            ptr,
            storage,
            offset,
            tuple(shares),
            requires_grad,
            is_leaf,
            grad_fn,
            version,
            stride,
            nbytes,
            graph,
        )
        last = previous.get(name)
        if last is not None and last[0] == facts and last[1].values is values and last[1].grad is grad:
            self._previous[name] = last
            return last[1]
        record = TensorRecord(
            shape=list(shape),
            dtype=str(t.dtype).removeprefix("torch."),
            device=str(t.device),
            values=values,
            preview=preview,
            data_ptr=ptr,
            storage=storage,
            storage_offset=offset,
            shares_memory_with=shares,
            requires_grad=requires_grad,
            is_leaf=is_leaf,
            grad_fn=grad_fn,
            grad=grad,
            version=version,
            stride=list(stride),
            element_size=int(t.element_size()),
            storage_nbytes=nbytes,
            object_id=id(t),
            **graph,
        )
        self._previous[name] = (facts, record)
        return record


def _shares(a: np.ndarray, other: np.ndarray | None, tensor: torch.Tensor | None) -> bool:
    """Exact element overlap where NumPy can decide it cheaply; byte bounds otherwise."""
    if other is None and tensor is not None and tensor.device.type == "cpu":
        try:
            other = tensor.detach().numpy()
        except (RuntimeError, TypeError):
            return True
    if other is None:
        return True
    try:
        return bool(np.shares_memory(a, other, max_work=100_000))  # type: ignore[arg-type]
    except Exception:  # numpy's TooHardError: the problem is too large to decide exactly
        return True


def _grad_fn_name(t: torch.Tensor) -> str | None:
    try:
        fn = t.grad_fn
    except RuntimeError:
        return "(invalid view)"  # torch refuses: a no_grad view whose base changed in place
    return type(fn).__name__ if fn is not None else None


def _sizes_valid(t: torch.Tensor) -> bool:
    """False for a tensor with a negative size (torch 2.1 leaves one after ``resize_(-1)``)."""
    shape = t.shape
    return not shape or min(shape) >= 0


def _fits_storage(t: torch.Tensor) -> bool:
    """True when every element of ``t`` lies inside its storage."""
    try:
        nbytes = t.untyped_storage().nbytes()
    except (RuntimeError, NotImplementedError):
        return t.device.type == "meta"
    n = t.numel()
    if n == 0:
        return True
    if t.is_contiguous():
        start = int(t.storage_offset()) * t.element_size()
        return start >= 0 and start + n * t.element_size() <= nbytes
    start, end = byte_span(t.shape, t.stride(), int(t.storage_offset()), t.element_size())
    return start >= 0 and end <= nbytes
