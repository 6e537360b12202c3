"""Autograd facts the records carry: graph reach, shared version counters, saved tensors.

Everything here reads torch state and returns plain data. Nothing keeps a reference to
a tensor or graph node beyond the call, except the small copies of saved tensors the
tracker keeps to notice silent changes (bounded by a budget).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from tcopy_cli.trace import compat
from tcopy_cli.trace.records import GraphNode, GraphRecord, SavedEvent, SavedInfo

MAX_GRAPH_NODES = 5_000
# Saved tensors larger than this are not copied; changes to them can't be checked.
MAX_FINGERPRINT_ELEMENTS = 1_000_000
MAX_FINGERPRINT_TOTAL = 20_000_000

_FREED = "after they have already been freed"
"""Part of torch's message for a saved tensor read after backward freed it."""

# A version no real tensor reaches in a short script.
_PROBE = 987_654_321


def safe_grad_fn(t: torch.Tensor) -> Any:
    """``t.grad_fn``, or None where torch refuses to give it.

    A view made under no_grad whose base was later changed in place with grad mode on
    raises on ``.grad_fn`` and ``.is_leaf``; observing must not fail on it.
    """
    try:
        return t.grad_fn
    except RuntimeError:
        return None


def safe_is_leaf(t: torch.Tensor) -> bool:
    """``t.is_leaf``, or False where torch refuses to say (see safe_grad_fn)."""
    try:
        return bool(t.is_leaf)
    except RuntimeError:
        return False


def grad_of(t: torch.Tensor) -> torch.Tensor | None:
    """``t.grad`` where reading it is silent in torch (leaves and retain_grad tensors)."""
    if safe_is_leaf(t) or t.retains_grad:
        return t.grad
    return None


def node_key(node: Any) -> int:
    """A stable identity for a graph node while it lives.

    The Python wrapper of a node is not always the same object on each access (it is
    in recent torch, not in older releases), so ids of wrappers can't be compared.
    An AccumulateGrad node is identified by its leaf tensor; every other node by its
    class and its sequence number, which torch assigns uniquely as nodes are created.
    """
    variable = getattr(node, "variable", None)
    if isinstance(variable, torch.Tensor):
        return id(variable)
    seq = getattr(node, "_sequence_nr", None)
    if seq is None:  # pragma: no cover - every torch node has it
        return id(node)
    return hash((type(node).__name__, seq()))


def walk_nodes(start: Any) -> Iterator[tuple[int, Any]]:
    """(key, node) for every node reachable from ``start`` through next_functions, once each."""
    seen: set[int] = set()
    stack = [start]
    while stack and len(seen) < MAX_GRAPH_NODES:
        node = stack.pop()
        nk = node_key(node)
        if nk in seen:
            continue
        seen.add(nk)
        yield nk, node
        stack.extend(nxt for nxt, _ in getattr(node, "next_functions", ()) if nxt is not None)


def node_id(t: torch.Tensor) -> int:
    """Identity of a tensor's place in the graph: its grad_fn, or itself for a leaf."""
    fn = safe_grad_fn(t)
    return node_key(fn) if fn is not None else id(t)


@dataclass
class GraphWalk:
    """Nodes reachable from a set of tensors, found in one pass."""

    nodes: dict[int, Any] = field(default_factory=dict)
    reach: dict[int, frozenset[int]] = field(default_factory=dict)

    def reach_from(self, t: torch.Tensor) -> frozenset[int]:
        """ids of nodes and leaf tensors strictly behind ``t`` in the graph."""
        fn = safe_grad_fn(t)
        if fn is None:
            return frozenset()
        key = node_key(fn)
        if key in self.reach:
            return self.reach[key]
        found: set[int] = set()
        for nk, node in walk_nodes(fn):
            self.nodes[nk] = node
            if nk != key:
                found.add(nk)
            variable = getattr(node, "variable", None)
            if isinstance(variable, torch.Tensor):
                found.add(id(variable))
        result = frozenset(found)
        self.reach[key] = result
        return result

    def leaves_behind(self, nid: int, leaf_names: dict[int, list[str]]) -> tuple[str, ...]:
        """Names of the leaf tensors a node's gradient flows into."""
        node = self.nodes.get(nid)
        if node is None:
            return ()
        names: list[str] = []
        for _, cur in walk_nodes(node):
            variable = getattr(cur, "variable", None)
            if isinstance(variable, torch.Tensor):
                names.extend(n for n in leaf_names.get(id(variable), []) if n not in names)
        return tuple(names)


def version_groups(groups: Iterable[list[tuple[str, torch.Tensor]]]) -> dict[str, list[str]]:
    """name -> other names in its group whose tensor shares its version counter.

    A counter can be shared across storages (``old = w.detach()`` and then ``w.data = ...``:
    ``w`` keeps its counter on new memory), so a group is any set of tensors. The probe is
    linear in a group's size: it sets the counter of the i-th tensor to ``_PROBE + i``, in
    order, then reads each one's: tensors sharing a counter all read the number of the last
    of them that was set, and tensors on different counters read different numbers. Every
    counter is then set back, so nothing observable changes. Where torch offers no way to set
    a counter, the result is empty and ``compat.degraded()`` says the fact is not measurable.
    """
    out: dict[str, list[str]] = {}
    set_version = compat.version_setter()
    if set_version is None:
        return out
    for members in groups:
        if len(members) < 2:
            continue
        original: list[tuple[str, torch.Tensor, int]] = []
        for name, t in members:
            try:
                original.append((name, t, t._version))
            except RuntimeError:  # inference tensors have no counter
                pass
        probed: list[tuple[str, torch.Tensor, int]] = []
        try:
            for i, (name, t, version) in enumerate(original):
                try:
                    set_version(t, _PROBE + i)
                except (RuntimeError, TypeError):  # a tensor kind the setter refuses
                    continue
                probed.append((name, t, version))
            by_counter: dict[int, list[str]] = {}
            for name, t, _ in probed:
                by_counter.setdefault(int(t._version), []).append(name)
        finally:
            for _, t, version in reversed(probed):
                set_version(t, version)
        for names in by_counter.values():
            for name in names:
                out[name] = [n for n in names if n != name]
    return out


@dataclass
class _Entry:
    node_type: str
    shape: tuple[int, ...]
    dtype: torch.dtype
    version: int
    copy: torch.Tensor | None
    tensor: str
    status: str = "ok"


_PLAIN_TYPES = (bool, int, float, complex, str)


def _plain(value: Any) -> bool:
    """A saved attribute's value of a type that is never a tensor (a flag, a size, sizes, a scalar).

    A node's attribute has one C++ type (torch generates each getter from the node's fields): one
    that read as such a value once holds no tensor in any node of that class (an optional tensor
    reads as None or a tensor; a list of tensors may be empty: neither is taken as plain)."""
    if isinstance(value, _PLAIN_TYPES):
        return True
    return isinstance(value, (tuple, list)) and bool(value) and all(isinstance(v, _PLAIN_TYPES) for v in value)


def same_values(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.layout is not torch.strided or b.layout is not torch.strided:
        try:
            a, b = a.to_dense(), b.to_dense()
        except (RuntimeError, NotImplementedError):
            return True  # not comparable here: no change is claimed
    if torch.equal(a, b):  # no temporaries, stops at the first difference (NaN is never equal: below)
        return True
    if a.is_floating_point() or a.is_complex():
        return bool(((a == b) | (a.isnan() & b.isnan())).all().item())
    return False


class SavedTensorTracker:
    """Notices changes to tensors that graph nodes saved for backward.

    After each step it reads every ``_saved_*`` tensor of the nodes reachable from named
    tensors. A read that torch refuses because of a version mismatch means an in-place
    change torch will catch at backward ("bumped"). A read that succeeds with values
    different from the copy taken when the tensor was first seen means a change that
    bumped no version — the ``.data`` route — and backward will silently use the new
    values ("silent").
    """

    def __init__(self) -> None:
        self.entries: dict[tuple[int, str, int], _Entry] = {}
        self.copied = 0
        self._attrs: dict[type, list[str]] = {}
        self.unwritten: Callable[[torch.Tensor], bool] = lambda _t: False
        """Whether nothing can have written a tensor's memory since the last step (then its values
        are those checked then, and are not compared again: ``trace.unchanged``)."""
        self.unseen: Callable[[], bool] = lambda: True
        """Whether code the record does not see may have run since the last step (``trace.unchanged``)."""
        self._freed: set[tuple[int, str]] = set()
        """(node, attribute) whose saved tensors backward freed, as read at the last step."""

    def _saved_attrs(self, node: Any) -> list[str]:
        """The ``_saved_*`` attributes of a node's class that may hold tensors (a copy: ``update``
        takes out those found to hold other values)."""
        cls = type(node)
        if cls not in self._attrs:
            self._attrs[cls] = [a for a in dir(node) if a.startswith("_saved_")]
        return list(self._attrs[cls])

    def update(
        self, walk: GraphWalk, describe: dict[int, str], leaves_behind: Callable[[int], tuple[str, ...]]
    ) -> tuple[list[SavedEvent], list[torch.Tensor]]:
        """Check every saved tensor of the walked nodes; return what changed this step, and the
        saved tensors read (for the byte count: each read unpacks a tensor, so it is done once).

        ``describe`` maps a storage data pointer to the names of tensors on it, for
        naming saved tensors; ``leaves_behind`` gives the named leaves behind a node.
        """
        events: list[SavedEvent] = []
        read: list[torch.Tensor] = []
        alive: set[tuple[int, str, int]] = set()
        # Backward frees a node's saved tensors for good: reading one then raises (at some
        # microseconds an error) and adds nothing, step after step while the graph stays named. The
        # same key is the same node while only the record's own code runs (sequence numbers are
        # the thread's, never reused); where other code may have run, every attribute is read again.
        known = set() if self.unseen() else self._freed
        freed: set[tuple[int, str]] = set()
        for nid, node in walk.nodes.items():
            node_type = type(node).__name__
            for attr in self._saved_attrs(node):
                if (nid, attr) in known:
                    freed.add((nid, attr))
                    continue
                try:
                    value = getattr(node, attr)
                    error = None
                except RuntimeError as exc:
                    value, error = None, str(exc)
                    if _FREED in error and "inplace operation" not in error:
                        freed.add((nid, attr))
                if _plain(value):  # never a tensor in a node of this class: not read again
                    self._attrs[type(node)].remove(attr)
                    continue
                items = value if isinstance(value, (list, tuple)) else [value]
                for idx, item in enumerate(items):
                    key = (nid, attr, idx)
                    entry = self.entries.get(key)
                    if error is not None:
                        # A version mismatch keeps the entry; freed buffers (after
                        # backward) end it.
                        if entry is not None and entry.node_type == node_type and "inplace operation" in error:
                            alive.add(key)
                            if entry.status == "ok":
                                entry.status = "bumped"
                                events.append(
                                    SavedEvent(
                                        "bumped", node_type, attr, entry.tensor, entry.version, leaves_behind(nid)
                                    )
                                )
                        continue
                    if not isinstance(item, torch.Tensor):
                        continue
                    read.append(item)
                    alive.add(key)
                    if entry is None or entry.node_type != node_type or entry.shape != tuple(item.shape):
                        self._remember(key, node_type, item, describe)
                        entry = self.entries[key]
                        if entry.copy is None and entry.status == "ok":
                            entry.status = "unchecked"
                            events.append(SavedEvent("unchecked", node_type, attr, entry.tensor, entry.version))
                        continue
                    if (
                        entry.status == "ok"
                        and entry.copy is not None
                        and not self.unwritten(item)
                        and not same_values(item.detach(), entry.copy)
                    ):
                        entry.status = "silent"
                        events.append(
                            SavedEvent("silent", node_type, attr, entry.tensor, entry.version, leaves_behind(nid))
                        )
        for key in [k for k in self.entries if k not in alive]:
            entry = self.entries.pop(key)
            if entry.copy is not None:
                self.copied -= entry.copy.numel()
        self._freed = freed
        return events, read

    def _remember(self, key: tuple[int, str, int], node_type: str, t: torch.Tensor, describe: dict[int, str]) -> None:
        old = self.entries.get(key)
        if old is not None and old.copy is not None:
            self.copied -= old.copy.numel()
        n = t.numel()
        copy = None
        if n <= MAX_FINGERPRINT_ELEMENTS and self.copied + n <= MAX_FINGERPRINT_TOTAL:
            copy = t.detach().clone()
            self.copied += n
        try:
            version = int(t._version)
        except RuntimeError:
            version = -1
        try:
            ptr = t.untyped_storage().data_ptr()
        except (RuntimeError, NotImplementedError):
            ptr = 0
        shape = "×".join(str(d) for d in t.shape) or "scalar"
        name = describe.get(ptr) or f"a {shape} {str(t.dtype).removeprefix('torch.')} tensor"
        self.entries[key] = _Entry(node_type, tuple(t.shape), t.dtype, version, copy, name)


def build_graph(
    walk: GraphWalk,
    tensors: list[tuple[str, torch.Tensor]],
    tracker: SavedTensorTracker,
) -> GraphRecord:
    """Label the walked nodes N1, N2 ... from the named tensors down, with names attached."""
    by_id: dict[int, list[str]] = {}
    leaf_names: dict[int, list[str]] = {}
    for name, t in tensors:
        if safe_grad_fn(t) is not None:
            by_id.setdefault(node_key(safe_grad_fn(t)), []).append(name)
        else:
            leaf_names.setdefault(id(t), []).append(name)
    labels: dict[int, str] = {}
    order: list[Any] = []
    queue = [safe_grad_fn(t) for _, t in tensors if safe_grad_fn(t) is not None]
    while queue and len(order) < MAX_GRAPH_NODES:
        node = queue.pop(0)
        nk = node_key(node)
        if nk in labels:
            continue
        labels[nk] = f"N{len(labels) + 1}"
        order.append(node)
        queue.extend(nxt for nxt, _ in getattr(node, "next_functions", ()) if nxt is not None)
    nodes: dict[str, GraphNode] = {}
    for node in order:
        variable = getattr(node, "variable", None)
        saved = [
            SavedInfo(
                attr=attr if idx == 0 else f"{attr}[{idx}]",
                tensor=entry.tensor,
                saved_version=entry.version,
                stale=entry.status in ("bumped", "silent"),
            )
            for (nid, attr, idx), entry in tracker.entries.items()
            if nid == node_key(node)
        ]
        label = labels[node_key(node)]
        nodes[label] = GraphNode(
            label=label,
            op=type(node).__name__,
            next=[labels.get(node_key(nxt)) if nxt is not None else None for nxt, _ in node.next_functions],
            variable=list(leaf_names.get(id(variable), ["(unnamed leaf)"]))
            if isinstance(variable, torch.Tensor)
            else [],
            tensors=by_id.get(node_key(node), []),
            saved=saved,
        )
    roots = {
        name: labels[node_key(safe_grad_fn(t))]
        for name, t in tensors
        if safe_grad_fn(t) is not None and node_key(safe_grad_fn(t)) in labels
    }
    ids = {id(t): name for name, t in tensors}
    views: dict[str, str] = {}
    for name, t in tensors:
        base = t._base
        if base is not None:
            views[name] = ids.get(id(base), "(unnamed base)")
    return GraphRecord(roots=roots, nodes=nodes, views=views)
