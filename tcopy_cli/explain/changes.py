"""Rules for names that kept their tensor: flags that flipped, in-place writes, NumPy aliases."""

from __future__ import annotations

from tcopy_cli.explain.effects import leaf_sharing_tail
from tcopy_cli.explain.facts import Findings, StepFacts, agree, led_group, names_text, note
from tcopy_cli.explain.ops import explained_names
from tcopy_cli.trace.records import Note
from tcopy_cli.trace.values import code_span


def requires_grad_flip(f: StepFacts, name: str) -> list[Note]:
    """``requires_grad_()`` on a leaf, or a tensor that stopped requiring grad (one note for the
    names of the step that flipped the same way, as ``model.requires_grad_(False)`` flips them all)."""
    names = led_group(f, "requires_grad_flip", name, f.kept_names, lambda n: _flip(f, n))
    if not names:
        return []
    if f.tensors[name].requires_grad:
        tail, sharing = leaf_sharing_tail(f, name) if len(names) == 1 else ("", [])
        grads = names_text([n + ".grad" for n in names])
        leaf = agree(names, "requires grad: it is a leaf", "require grad: they are leaves")
        return [
            note(
                "change.requires-grad-on",
                f"{names_text(names)} now {leaf}, and backward will fill {grads}.{tail}",
                [*names, *sharing],
            )
        ]
    return [
        note(
            "change.requires-grad-off",
            f"{names_text(names)} no longer {agree(names, 'requires', 'require')} grad: autograd stops tracking "
            f"operations on {agree(names, 'it', 'them')}.",
            names,
        )
    ]


def _flip(f: StepFacts, name: str) -> tuple[str, ...] | None:
    """How ``name``'s requires_grad flipped (a leaf that shares memory with a tensor that requires grad
    gets a note of its own: it says which), or None."""
    r, old = f.tensors[name], f.before[name]
    if name in explained_names(f):  # the operation record says which call flipped it
        return None
    if r.requires_grad and not old.requires_grad and r.is_leaf:
        return ("on", name) if leaf_sharing_tail(f, name)[1] else ("on",)
    if not r.requires_grad and old.requires_grad:
        return ("off",)
    return None


def joined_graph(f: StepFacts, name: str) -> list[Note]:
    """A leaf made a non-leaf by an in-place operation with a tensor that requires grad."""
    r, old = f.tensors[name], f.before[name]
    if not (old.is_leaf and not r.is_leaf and r.grad_fn is not None):
        return []
    srcs = [n for n in r.reaches if n != name]
    tail = f"; gradients through {name} now flow to {names_text(srcs)}." if srcs else "."
    return [
        note(
            "change.joined-graph",
            f"{name} joined the graph: an in-place operation with a tensor that requires grad made it a "
            f"non-leaf ({r.grad_fn}){tail}",
            [name, *srcs],
        )
    ]


def untracked_write(f: StepFacts, name: str) -> list[Note]:
    """Values that changed while the version counter stood still."""
    r, old = f.tensors[name], f.before[name]
    if name in explained_names(f):  # e.g. x.data = ...: the record says what replaced the values
        return []
    if r.values == old.values or r.values is None or old.values is None:
        return []
    if r.version < 0 or old.version < 0:  # an inference tensor: no version counter at all
        failed = [op for op in f.step.ops if op.error is not None and op.inputs and op.inputs[0].name == name]
        if not failed:
            return []
        return [
            note(
                "change.write-before-error",
                f"{code_span(failed[0].call)} raised an error, yet {name}'s values changed ({old.preview} → "
                f"{r.preview}): the write happened before torch refused it. {name} is an inference tensor, "
                f"with no version counter to show writes.",
                [name],
                op=failed[0].index,
            )
        ]
    if r.version == old.version:
        normed = [op for op in f.step.ops if op.function == "batch_norm" and any(i.name == name for i in op.inputs)]
        if normed:
            return [
                note(
                    "change.running-stats",
                    f"{name} moved toward this batch's statistics: {code_span(normed[0].call)} ran batch_norm in "
                    f"training mode, which updates its running statistics in place without moving their version "
                    f"counter. Nothing takes gradients from them; eval() makes batch_norm read them instead.",
                    [name],
                    op=normed[0].index,
                )
            ]
        through = _alias_write(f, name)
        how = (
            f"{code_span(through[0])} wrote into its memory through {through[1]}"
            if through is not None
            else "the write went through an alias with its own counter (.data, or a NumPy array on the same memory)"
        )
        return [
            note(
                "change.untracked-write",
                f"{name}'s values changed but its version counter did not: {how}, so autograd cannot notice it.",
                [name],
            )
        ]
    return []


def _alias_write(f: StepFacts, name: str) -> tuple[str, str] | None:
    """(in-place call, alias) when the operation record shows a write into an alias of ``name``.

    The alias is a NumPy array the step wrote into (``n += 1``, ``n[0] = 5``) that measurably
    shares ``name``'s memory, or a result of an earlier operation of the step (``w.data``) whose
    record measured it as an alias of ``name`` with its own version counter.
    """
    ops = f.step.ops
    arrays = f.step.arrays
    for op in ops:
        if op.kind in ("augassign", "setitem") and op.inputs and op.inputs[0].kind == "ndarray":
            array = op.inputs[0].name
            if array in arrays and name in arrays[array].shares_memory_with:  # measured: same memory
                return op.call, f"{array}, a NumPy array on the same memory"
        for i in op.bumped:  # indices of the operation's inputs
            given, source = op.inputs[i].name, op.inputs[i].from_op
            other = f.tensors.get(given) if given is not None and given != name else None
            if (
                other is not None
                and name in other.shares_memory_with
                and other.version_counter != f.tensors[name].version_counter
            ):  # measured: a named tensor on the same memory with another counter
                return op.call, f"{given}, which shares {name}'s memory but not its version counter"
            if source is None or not 0 <= source < len(ops):
                continue
            made = ops[source]
            for res in made.results:
                for rel in res.relations:
                    src = made.inputs[rel.input] if rel.input < len(made.inputs) else None
                    if rel.relation == "alias" and src is not None and src.name == name:
                        return op.call, f"{code_span(made.call)}, an alias with its own version counter"
    return None


def in_place_writes(f: StepFacts) -> list[Note]:
    """Version counters that moved, grouped by counter (a shared counter moves for every tensor
    on it, whatever memory each uses); tensors each on their own counter whose versions moved
    alike (as ``opt.step()`` moves every parameter's) in one note."""
    groups: dict[tuple[str, int, int], list[str]] = {}
    for name, r in f.tensors.items():
        old = f.before.get(name)
        if old is not None and name not in f.new_names and r.version > old.version >= 0:
            groups.setdefault((r.version_counter or r.storage, old.version, r.version), []).append(name)
    found = Findings()
    for (_, v0, v1), names in groups.items():
        if len(names) == 1:
            found.group((v0, v1), names[0])
        else:
            found.add([_shared_write(f, v0, v1, names)])
    return found.notes(_own_writes)


def _own_writes(versions: tuple[int, int], names: list[str]) -> Note:
    """Tensors each with a version counter (and memory) of its own, each changed in place."""
    v0, v1 = versions
    own = ", each on its own memory" if len(names) > 1 else ""
    return note("change.in-place", _written_sentence(names, v0, v1, own), names)


def _written_sentence(names: list[str], v0: int, v1: int, how: str) -> str:
    """``a was changed in place (version 1 → 2)``, ``how`` before its full stop."""
    return f"{names_text(names)} {agree(names, 'was', 'were')} changed in place (version {v0} → {v1}){how}."


def _shared_write(f: StepFacts, v0: int, v1: int, names: list[str]) -> Note:
    """Names whose shared version counter moved (on one storage, or on several: ``w.data = ...``
    keeps w's counter on new memory, and a ``w.detach()`` made before keeps the old memory)."""
    # Names whose own bytes were not written (values equal) only share the counter: say so,
    # rather than claim they changed.
    untouched = [n for n in names if f.tensors[n].values is not None and f.tensors[n].values == f.before[n].values]
    written = [n for n in names if n not in untouched] or names
    storages = {f.tensors[n].storage for n in written}
    shared = f"memory ({next(iter(storages))}) and one version counter" if len(storages) == 1 else "one version counter"
    together = f" together: they share {shared}" if len(written) > 1 else ""
    sentence = _written_sentence(written, v0, v1, together)
    if untouched and untouched != names:
        its = agree(untouched, "its", "their")
        sentence += (
            f" {names_text(untouched)} {agree(untouched, 'shares', 'share')} that version counter, so "
            f"{its} version moved too, but {its} own bytes were not written."
        )
    return note("change.in-place", sentence, names)


def numpy_views_written(f: StepFacts) -> list[Note]:
    """NumPy arrays on the memory of tensors an in-place operation wrote: the array shows the write."""
    out = []
    for name, a in f.step.arrays.items():
        old = f.state.previous_arrays.get(name)
        if old is None or old.data_ptr != a.data_ptr or old.values == a.values or a.values is None:
            continue
        written = [
            n
            for n in a.shares_memory_with
            if n in f.tensors and n in f.before and 0 <= f.before[n].version < f.tensors[n].version
        ]
        if written:
            out.append(
                note(
                    "change.numpy-sees-write",
                    f"The NumPy array {name} changed too ({old.preview} → {a.preview}): it lies on the memory of "
                    f"{names_text(written)}, so an in-place write to {agree(written, 'that tensor', 'those tensors')} "
                    f"shows in the array (a copy made with .numpy().copy() would not change).",
                    [name, *written],
                )
            )
    return out


def numpy_aliases(f: StepFacts) -> list[Note]:
    """A NumPy array (new, or moved to other memory) on the memory of tensors."""
    out = []
    arrays, before = f.step.arrays, f.state.previous_arrays
    for name, a in arrays.items():
        old = before.get(name)
        if name in explained_names(f):
            continue
        tensors = [n for n in a.shares_memory_with if n not in arrays and not n.endswith(".grad")]
        if (old is None or old.data_ptr != a.data_ptr) and tensors:
            out.append(
                note(
                    "relation.numpy-array",
                    f"{name} is a NumPy array on the memory of {names_text(tensors)}"
                    + (f" (storage {a.storage})" if a.storage else "")
                    + f": writes to {name} change {names_text(tensors)}, and autograd never sees them.",
                    [name, *tensors],
                )
            )
    return out
