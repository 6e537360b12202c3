"""Notes: plain sentences about what a step did, derived from observed facts only.

The inputs are records (storages, version-counter sharing, graph reach, grads,
versions, saved-tensor events), never the statement's text, so ``b = a.detach()`` and
``b = torch.Tensor.detach(a)`` get the same words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tcopy_cli.explain.errors import explain_error
from tcopy_cli.trace.records import ArrayRecord, TensorRecord
from tcopy_cli.trace.values import format_nested

if TYPE_CHECKING:
    from tcopy_cli.trace.records import SavedEvent


def _fmt(values: Any) -> str:
    return format_nested(values)


def overlaps(a: TensorRecord, b: TensorRecord) -> bool:
    """True when two tensors on one storage cover at least one common byte."""
    if a.storage != b.storage:
        return False
    a0, a1 = a.byte_span()
    b0, b1 = b.byte_span()
    return a0 < b1 and b0 < a1


def _storage_text(r: TensorRecord) -> str:
    return r.storage if r.storage_offset == 0 else f"{r.storage}, offset {r.storage_offset}"


def _names(names: list[str] | tuple[str, ...]) -> str:
    names = list(names)
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def _subtract(new: Any, old: Any) -> Any:
    if isinstance(new, list) and isinstance(old, list) and len(new) == len(old):
        return [_subtract(n, o) for n, o in zip(new, old)]
    if isinstance(new, (int, float)) and isinstance(old, (int, float)) and not isinstance(new, bool):
        return new - old
    return None


def _contains_none(v: Any) -> bool:
    return v is None or (isinstance(v, list) and any(_contains_none(x) for x in v))


def _all_zero(v: Any) -> bool:
    if isinstance(v, list):
        return all(_all_zero(x) for x in v)
    return bool(v == 0)


@dataclass
class _Bump:
    index: int
    line: int
    source: str
    event: SavedEvent


@dataclass
class Explainer:
    """Turns each step's facts into notes; remembers what earlier steps did."""

    previous: dict[str, TensorRecord] = field(default_factory=dict)
    previous_arrays: dict[str, ArrayRecord] = field(default_factory=dict)
    bumps: list[_Bump] = field(default_factory=list)
    corrupted: list[_Bump] = field(default_factory=list)
    backward_counts: dict[str, int] = field(default_factory=dict)
    backward_steps: list[int] = field(default_factory=list)

    def explain(
        self,
        index: int,
        line: int,
        source: str,
        tensors: dict[str, TensorRecord],
        arrays: dict[str, ArrayRecord],
        warnings: list[str],
        grad_enabled: bool,
        saved_events: list[SavedEvent],
        error: tuple[str, str] | None,
    ) -> tuple[list[str], str | None]:
        """(notes, error explanation or None) for one step."""
        notes: list[str] = []
        before = self.previous
        before_arrays = self.previous_arrays
        new_names = [n for n, r in tensors.items() if n not in before or before[n].object_id != r.object_id]
        for name in new_names:
            notes.extend(self._relation(name, tensors, before, grad_enabled, new_names))
        for name, rec in tensors.items():
            if name in before and name not in new_names:
                notes.extend(self._changes(name, rec, before[name], tensors))
        notes.extend(self._inplace(tensors, before, new_names))
        notes.extend(self._arrays(arrays, before_arrays))
        notes.extend(self._grads(index, tensors, before))
        notes.extend(self._saved(index, line, source, saved_events))
        notes.extend(warning_notes(warnings))
        self.previous = tensors
        self.previous_arrays = arrays
        explanation = None
        if error is not None:
            explanation = self._error(error[0], error[1], source, tensors)
        return notes, explanation

    # --- relations of a new or rebound name ------------------------------------------

    def _relation(
        self,
        name: str,
        tensors: dict[str, TensorRecord],
        before: dict[str, TensorRecord],
        grad_enabled: bool,
        new_names: list[str],
    ) -> list[str]:
        b = tensors[name]
        out: list[str] = []
        old = before.get(name)
        others = {n: r for n, r in tensors.items() if n != name}
        # Prefer sources that existed before this step.
        order = sorted(others, key=lambda n: (n in new_names, list(tensors).index(n)))
        same = [n for n in order if others[n].object_id == b.object_id]
        if same and ":" in name:
            return out  # an argument or local naming a tensor the caller has: nothing new
        if same:
            out.append(
                f"{name} is the same tensor object as {same[0]}: assignment only adds a name, nothing is "
                f"copied; every change through one name shows through the other."
            )
            return out
        sharing = [n for n in order if others[n].storage == b.storage]
        if sharing:
            out.append(self._alias_sentence(name, b, sharing, others))
        else:
            sources = [n for n in order if n in b.reaches]
            copies = [
                n
                for n in order
                if others[n].shape == b.shape
                and others[n].dtype == b.dtype
                and b.values is not None
                and others[n].values == b.values
            ]
            copy_in_graph = [n for n in sources if n in copies]
            if copy_in_graph:
                src = copy_in_graph[0]
                out.append(
                    f"{name} is a copy of {src} in new memory ({_storage_text(b)}) that stays in the graph "
                    f"({b.grad_fn}): in-place changes to {name} don't affect {src}, and gradients through "
                    f"{name} flow back into {src}."
                )
            elif sources and b.grad_fn is not None:
                leaves = [n for n in sources if tensors[n].is_leaf and tensors[n].requires_grad]
                reach = f"; backward through it sends gradients to {_names(leaves)}" if leaves else ""
                out.append(
                    f"{name} is a new tensor in the graph ({b.grad_fn}), computed from {_names(sources)}{reach}."
                )
            elif not grad_enabled and not b.requires_grad:
                out.append(
                    f"{name} was computed with gradient tracking off (no_grad/inference mode): it has no grad_fn "
                    f"and requires_grad=False, whatever its inputs were."
                )
            elif copies and not b.reaches:
                src = copies[0]
                out.append(
                    f"{name} holds the same values as {src} in new memory ({_storage_text(b)}) with no autograd "
                    f"link to it: an independent copy. Changes to either don't affect the other, and no "
                    f"gradient flows from {name} to {src}."
                )
        if old is not None:
            out.extend(self._rebinding(name, b, old, tensors))
        return out

    def _alias_sentence(self, name: str, b: TensorRecord, sharing: list[str], others: dict[str, TensorRecord]) -> str:
        # The source: a name b's graph reaches, else one sharing its version counter, else the first.
        src = next((n for n in sharing if n in b.reaches), None)
        src = src or next((n for n in sharing if n in b.shares_version_with), sharing[0])
        a = others[src]
        where = f"{src}'s memory (storage {b.storage})"
        disjoint = (
            ""
            if overlaps(a, b)
            else (" They cover different bytes of that storage, so a write to one does not change the other.")
        )
        shared_vc = src in b.shares_version_with
        if src in b.reaches and shared_vc:
            return (
                f"{name} is a view of {src}: same memory ({_storage_text(b)}), same version counter, and it "
                f"stays in the graph ({b.grad_fn}). In-place changes to {name} also change {src}; autograd will "
                f"notice. Gradients through {name} flow back into {src}.{disjoint}"
            )
        if shared_vc and b.requires_grad and b.is_leaf:
            return (
                f"{name} is a new leaf that requires grad on {where}: in-place changes show in both, but "
                f"gradients into {name} stay in {name}.grad and never reach {src}.{disjoint}"
            )
        if shared_vc and not b.requires_grad and a.requires_grad:
            return (
                f"{name} shares {where} and its version counter but is cut from the graph (no grad_fn, "
                f"requires_grad=False): in-place changes to {name} also change {src} and autograd will notice "
                f"them, but no gradient flows from {name} back to {src}.{disjoint}"
            )
        if shared_vc:
            return (
                f"{name} is a view of {src}: same memory ({_storage_text(b)}) and version counter; in-place "
                f"changes to either show in both.{disjoint}"
            )
        if not b.shares_version_with and b.version >= 0 and a.version >= 0:
            return (
                f"{name} shares {where} but has its own version counter and no graph (what .data gives): "
                f"in-place changes to {name} also change {src} and autograd will NOT notice, so gradients that "
                f"use {src}'s saved values can be silently wrong.{disjoint}"
            )
        return f"{name} shares {where}.{disjoint}"

    def _rebinding(self, name: str, b: TensorRecord, old: TensorRecord, tensors: dict[str, TensorRecord]) -> list[str]:
        held = [n for n, r in tensors.items() if old.node_id in r.reach_ids]
        if old.node_id in b.reach_ids:
            if old.is_leaf and old.requires_grad and not b.is_leaf:
                return [
                    f"{name} now names a new non-leaf tensor computed from the old {name}. The old leaf still "
                    f"receives gradients, but you can no longer read its .grad through the name {name} (the "
                    f"usual fix: update leaves in place under torch.no_grad())."
                ]
            return [
                f"The name {name} now refers to a new tensor computed from the old one; the graph still holds "
                f"the old {name}, so backward through earlier results is unaffected."
            ]
        if held:
            return [
                f"The name {name} now refers to a new tensor, but the graph of {_names(held)} still holds the old "
                f"{name}: rebinding a name does not change what backward computes."
            ]
        return []

    # --- changes to existing names ---------------------------------------------------

    def _changes(self, name: str, r: TensorRecord, old: TensorRecord, tensors: dict[str, TensorRecord]) -> list[str]:
        out: list[str] = []
        if r.requires_grad and not old.requires_grad and r.is_leaf:
            sharing = [n for n in r.shares_memory_with if n in tensors and tensors[n].requires_grad]
            tail = (
                f" It shares memory with {_names(sharing)}, but gradients into {name} won't reach {_names(sharing)}."
                if sharing
                else ""
            )
            out.append(f"{name} now requires grad: it is a leaf, and backward will fill {name}.grad.{tail}")
        elif not r.requires_grad and old.requires_grad:
            out.append(f"{name} no longer requires grad: autograd stops tracking operations on it.")
        if old.is_leaf and not r.is_leaf and r.grad_fn is not None:
            srcs = [n for n in r.reaches if n != name]
            out.append(
                f"{name} joined the graph: an in-place operation with a tensor that requires grad made it a "
                f"non-leaf ({r.grad_fn})" + (f"; gradients through {name} now flow to {_names(srcs)}." if srcs else ".")
            )
        if r.version == old.version and r.values != old.values and r.values is not None and old.values is not None:
            out.append(
                f"{name}'s values changed but its version counter did not: the write went through an alias "
                f"with its own counter (.data, or a NumPy array on the same memory), so autograd cannot "
                f"notice it."
            )
        return out

    def _inplace(
        self, tensors: dict[str, TensorRecord], before: dict[str, TensorRecord], new_names: list[str]
    ) -> list[str]:
        groups: dict[tuple[str, int, int], list[str]] = {}
        for name, r in tensors.items():
            old = before.get(name)
            if old is not None and name not in new_names and r.version > old.version >= 0:
                groups.setdefault((r.storage, old.version, r.version), []).append(name)
        out = []
        for (storage, v0, v1), names in groups.items():
            # Names on the storage whose own bytes were not written (values equal) only
            # share the counter: say so, rather than claim they changed.
            untouched = [n for n in names if tensors[n].values is not None and tensors[n].values == before[n].values]
            written = [n for n in names if n not in untouched] or names
            verb = "was" if len(written) == 1 else "were"
            together = f" together: they share memory ({storage}) and one version counter" if len(written) > 1 else ""
            sentence = f"{_names(written)} {verb} changed in place (version {v0} → {v1}){together}."
            if untouched and untouched != names:
                sentence += (
                    f" {_names(untouched)} {'shares' if len(untouched) == 1 else 'share'} that version counter, so "
                    f"{'its' if len(untouched) == 1 else 'their'} version moved too, but "
                    f"{'its' if len(untouched) == 1 else 'their'} own bytes were not written."
                )
            out.append(sentence)
        return out

    def _arrays(self, arrays: dict[str, ArrayRecord], before: dict[str, ArrayRecord]) -> list[str]:
        out = []
        for name, a in arrays.items():
            old = before.get(name)
            tensors = [n for n in a.shares_memory_with if n not in arrays and not n.endswith(".grad")]
            if (old is None or old.data_ptr != a.data_ptr) and tensors:
                out.append(
                    f"{name} is a NumPy array on the memory of {_names(tensors)}"
                    + (f" (storage {a.storage})" if a.storage else "")
                    + f": writes to {name} change {_names(tensors)}, and autograd never sees them."
                )
        return out

    # --- gradients -------------------------------------------------------------------

    def _grads(self, index: int, tensors: dict[str, TensorRecord], before: dict[str, TensorRecord]) -> list[str]:
        out: list[str] = []
        received: list[str] = []
        for name, r in tensors.items():
            old = before.get(name)
            if old is None or old.object_id != r.object_id:
                continue
            g, og = r.grad, old.grad
            if g is None and og is not None:
                out.append(f"{name}.grad was reset to None: the next backward starts from nothing.")
                self.backward_counts[name] = 0
            elif g is not None and og is None:
                received.append(name)
                self.backward_counts[name] = 1
                out.append(f"backward put a gradient into {name}.grad: {g.preview}.")
            elif (g is not None and og is not None and g.values != og.values) or (
                g is not None and og is not None and g.values is None and g.version != og.version
            ):
                assert g is not None and og is not None
                if g.values is not None and _all_zero(g.values) and not _all_zero(og.values):
                    out.append(f"{name}.grad was zeroed in place (same memory, values now 0).")
                    self.backward_counts[name] = 0
                    continue
                received.append(name)
                n = self.backward_counts.get(name, 1) + 1
                self.backward_counts[name] = n
                inc = _subtract(g.values, og.values)
                inc_text = f" (+{_fmt(inc)})" if inc is not None and not _contains_none(inc) else ""
                out.append(
                    f"backward added into {name}.grad: {og.preview} → {g.preview}{inc_text}. Gradients "
                    f"accumulate: this is backward #{n} into {name}.grad since it was last reset."
                )
        if sum("reset to None" in n for n in out) >= 2:
            out.append(
                "Several grads were reset to None at once, as optimizer.zero_grad() and module.zero_grad() do by "
                "default; zero_grad(set_to_none=False) zeroes them in place instead."
            )
        if received:
            self.backward_steps.append(index)
            for bump in list(self.corrupted):
                hit = [n for n in received if n in bump.event.affects]
                if hit:
                    out.append(
                        f"⚠ {_names([n + '.grad' for n in hit])} "
                        f"{'was' if len(hit) == 1 else 'were'} computed from corrupted inputs: "
                        f"{bump.event.node} used {bump.event.tensor} as changed in step {bump.index} "
                        f"(line {bump.line}), not the values of the forward pass."
                    )
                    self.corrupted.remove(bump)
        return out

    # --- saved tensors ---------------------------------------------------------------

    def _saved(self, index: int, line: int, source: str, events: list[SavedEvent]) -> list[str]:
        out: list[str] = []
        seen: set[tuple[str, str, str]] = set()
        for ev in events:
            key = (ev.kind, ev.node, ev.tensor)
            if key in seen:
                continue
            seen.add(key)
            if ev.kind == "silent":
                self.corrupted.append(_Bump(index, line, source, ev))
                out.append(
                    f"⚠ silent gradient corruption: {ev.tensor}, which {ev.node} saved for backward (at version "
                    f"{ev.saved_version}), changed without a version bump (a write through .data or another "
                    f"untracked alias). The next backward will compute gradients from the changed values, and "
                    f"torch will not complain."
                )
            elif ev.kind == "bumped":
                self.bumps.append(_Bump(index, line, source, ev))
                out.append(
                    f"{ev.tensor} was saved by {ev.node} for backward at version {ev.saved_version} and has now "
                    f"been changed in place: a backward through {ev.node} will fail with a version error."
                )
            elif ev.kind == "unchecked":
                out.append(f"{ev.tensor}, saved by {ev.node}, is too large for tcopy to watch for silent changes.")
        return out

    # --- errors ----------------------------------------------------------------------

    def _error(self, type_name: str, message: str, source: str, tensors: dict[str, TensorRecord]) -> str:
        base = explain_error(type_name, message)
        if "modified by an inplace operation" in message:
            m = re.search(r"output \d+ of (\w+)", message)
            op = m[1] if m else None
            candidates = [b for b in self.bumps if op is None or b.event.node.startswith(op)] or self.bumps
            if candidates:
                b = candidates[-1]
                return (
                    f"{b.event.node} saved {b.event.tensor} at version {b.event.saved_version} to compute "
                    f"gradients; the earlier step {b.index} (line {b.line}: {b.source}) changed it in place "
                    f"afterwards, so backward refuses to use it. Fix: use an out-of-place operation there "
                    f"(e.g. y = y * 2 instead of y.mul_(2) or y *= 2), or clone() before the in-place change."
                )
        if "backward through the graph a second time" in message and self.backward_steps:
            return (
                f"The graph was already used by the backward in step {self.backward_steps[-1]}, which freed the "
                f"values it had saved. " + base
            )
        return base


def warning_notes(warnings: list[str]) -> list[str]:
    """Explain the torch warnings a step raised."""
    notes: list[str] = []
    for w in warnings:
        if "To copy construct from a tensor" in w:
            notes.append(
                "torch.tensor(t) / t.new_tensor(t) copied the data into a new tensor with no autograd history; "
                "torch suggests t.clone().detach() (or .requires_grad_(True) after it) to say that explicitly."
            )
        elif ".grad attribute of a Tensor that is not a leaf" in w:
            notes.append(
                "Reading .grad of a non-leaf tensor gives None: autograd keeps gradients only for leaves. "
                "Call t.retain_grad() before backward() to keep it."
            )
    return notes
