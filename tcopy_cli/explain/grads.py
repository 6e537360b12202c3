"""Rules about ``.grad``: what backward put there, accumulation, resets, corrupted results.

``grad_changes`` counts backward passes per tensor across steps (ExplainState); the
rules after it read its notes (by kind) rather than compare the records again.
"""

from __future__ import annotations

import re
from typing import Any

from tcopy_cli.explain.facts import Findings, StepFacts, agree, names_text, note
from tcopy_cli.explain.ops import written_tensor
from tcopy_cli.trace.records import Note, OpRecord, TensorRecord
from tcopy_cli.trace.values import format_nested

RECEIVED = ("grad.received", "grad.accumulated")


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


def _changed(g: TensorRecord, og: TensorRecord) -> bool:
    """The grad moved: other values, another tensor (storage), or an in-place write (version);
    values too large to list show a write that bumps no version (through ``.data``) in their summary."""
    return (
        g.values != og.values
        or g.storage != og.storage
        or g.version != og.version
        or (g.values is None and g.preview != og.preview)
    )


def grad_changes(f: StepFacts) -> list[Note]:
    """Each tensor whose .grad was set or added to in this step; the grads zeroed, and those reset,
    in one note each (``optimizer.zero_grad()`` resets every parameter's).

    Backward is named only where the step's record holds a backward call; how many passes
    added into a grad is read from its version counter (one in-place add per pass)."""
    found = Findings()
    counts = f.state.backward_counts
    stepped: dict[int, int] = {}
    backward = _backward_ran(f)
    reset_first = _reset_before_backward(f)
    passes_recorded = sum(op.kind == "call" and op.function == "backward" and op.error is None for op in f.step.ops)
    for name, r in f.tensors.items():
        old = f.before.get(name)
        if old is None or old.object_id != r.object_id:
            continue
        g, og = r.grad, old.grad
        if _grad_assigned(f, name):  # x.grad = ...: the operation record's note tells it, not backward
            counts[r.object_id] = 0 if g is None else 1
            continue
        if g is None and og is not None:
            found.group("grad.reset", name)
            counts[r.object_id] = 0
        elif g is not None and og is None:
            if backward:
                counts[r.object_id] = 1
                text = f"backward put a gradient into {name}.grad: {_ended(g.preview)}"
                found.add([note("grad.received", text, [name])])
            else:
                found.add([note("grad.written", f"{name}.grad now holds {g.preview}, though no backward ran.", [name])])
        elif g is not None and og is not None and _changed(g, og):
            write = _write_into(f, name, r)
            if (g.values is not None and _all_zero(g.values) and not _all_zero(og.values)) or (
                write is not None and write.function == "zero_"
            ):
                found.group("grad.zeroed", name)
                counts[r.object_id] = 0
                continue
            inc = _subtract(g.values, og.values)
            inc_text = f" (+{format_nested(inc)})" if inc is not None and not _contains_none(inc) else ""
            change = f"{og.preview} → {g.preview}{inc_text}"
            if not backward or write is not None:
                # The record shows no backward (or shows the script writing into the grad):
                # the change is not a backward pass and does not count as one.
                how = f"`{write.call}` wrote into it in place" if write is not None else "no backward ran"
                text = f"{name}.grad changed: {change}; {how}. A backward adds its gradient to the values it holds."
                found.add([note("grad.written", text, [name])])
                continue
            # Backward adds into the grad in place, one write per pass (its version counter);
            # zero_grad() earlier in the step (an optimizer's closure) dropped the grad (new
            # memory) or zeroed it (a second write): then the gradient is the new one alone.
            same = g.storage == og.storage
            if reset_first and (not same or g.version - og.version >= 2):
                counts[r.object_id] = stepped[r.object_id] = 1
                how = "dropped" if not same else "zeroed"
                text = (
                    f"zero_grad() in this step {how} {name}.grad ({og.preview}), then backward put a new "
                    f"gradient into it: {_ended(g.preview)}"
                )
                found.add([note("grad.received", text, [name])])
                continue
            # One tensor under several names (an argument and the caller's name) counts once.
            passes = max(1, min(g.version - og.version, passes_recorded)) if same else 1
            n = stepped.get(r.object_id) or counts.get(r.object_id, 1) + passes
            counts[r.object_id] = stepped[r.object_id] = n
            several = f"{passes} backward passes added" if passes > 1 else "backward added"
            moved = f" (a new tensor, {g.storage}: added out of place)" if not same else ""
            hooks = (
                f" torch called back {names_text(list(step_hooks))} during it, which can change the grad too."
                if (step_hooks := f.step.hooks)
                else ""
            )
            found.add(
                [
                    note(
                        "grad.accumulated",
                        f"{several} into {name}.grad{moved}: {_ended(change)} Gradients "
                        f"accumulate: this is backward #{n} into {name}.grad since it was last reset.{hooks}",
                        [name],
                    )
                ]
            )
    return found.notes(lambda kind, names: _cleared(f, kind, names))


def _cleared(f: StepFacts, kind: str, names: list[str]) -> Note:
    """The grads reset to None (``grad.reset``) or zeroed in place (``grad.zeroed``) in the step."""
    grads = names_text([n + ".grad" for n in names])
    were = agree(names, "was", "were")
    if kind == "grad.zeroed":
        return note(kind, f"{grads} {were} zeroed in place (same memory, values now 0).", names)
    if len({f.tensors[n].object_id for n in names}) < 2:  # one tensor, under one name or several
        return note(kind, f"{grads} {were} reset to None: the next backward starts from nothing.", names)
    return note(
        kind,
        f"{grads} were reset to None at once, as optimizer.zero_grad() and module.zero_grad() do by default: "
        f"the next backward starts from nothing. zero_grad(set_to_none=False) zeroes them in place instead.",
        names,
    )


def _grad_assigned(f: StepFacts, name: str) -> bool:
    """``name.grad = ...`` (or ``= None``) ran in this step: the record shows the attribute write."""
    return any(
        op.kind == "setattr"
        and op.error is None
        and "grad" in op.detail.get("replaced", [])
        and written_tensor(f, op) == name
        for op in f.step.ops
    )


def _ended(preview: str) -> str:
    """A preview closing a sentence: ``20.`` ends it as it is (no ``20..``)."""
    return preview if preview.endswith(".") else preview + "."


def _reset_before_backward(f: StepFacts) -> bool:
    """The record holds a ``zero_grad()`` call followed by a backward call (an optimizer's closure)."""
    reset = False
    for op in f.step.ops:
        if op.kind == "call" and op.error is None:
            if op.function == "zero_grad":
                reset = True
            elif op.function == "backward" and reset:
                return True
    return False


def _backward_ran(f: StepFacts) -> bool:
    """A backward pass ran in this step: the record holds a ``backward`` call that returned.

    ``x.backward()`` and ``torch.autograd.backward`` (the sandbox records both, also inside a
    closure a library calls; ``--trust`` records the tracer seeing ``torch.autograd.backward``).
    """
    return any(op.kind == "call" and op.function == "backward" and op.error is None for op in f.step.ops)


def _write_into(f: StepFacts, name: str, r: TensorRecord) -> OpRecord | None:
    """The recorded in-place write into ``name.grad`` in this step (``w.grad.add_(1)``,
    ``w.grad += 5``, ``p.grad.data.zero_()`` with ``p`` the same tensor, ``g.mul_(2)`` on
    ``g = w.grad``); None if there is none.

    An input counts where its version counter moved in the operation and it is the grad:
    written as ``X.grad`` (or a view or ``.data`` of it) with ``X`` this tensor under any
    name, or a name on the grad's storage.
    """
    grad = r.grad
    assert grad is not None
    for op in f.step.ops:
        for i in op.bumped:
            if i >= len(op.inputs):
                continue
            inp = op.inputs[i]
            held = f.tensors.get(inp.name) if inp.name is not None else None
            if held is not None and held.storage == grad.storage and held.device == grad.device:
                return op
            m = _GRAD_EXPR.match(inp.expr)
            owner = f.tensors.get(m[1]) if m is not None else None
            if owner is not None and owner.object_id == r.object_id:
                return op
    return None


_GRAD_EXPR = re.compile(r"^(.+?)\.grad(?:$|[.\[])")


def corrupted_grads(f: StepFacts) -> list[Note]:
    """Grads computed by a backward that used saved tensors changed silently in an earlier step."""
    received = [t for n in f.notes if n.kind in RECEIVED for t in n.tensors]
    if not received:
        return []
    f.state.backward_steps.append(f.step.index)
    out = []
    for bump in list(f.state.corrupted):
        hit = [n for n in received if n in bump.event.affects]
        if hit:
            out.append(
                note(
                    "grad.corrupted",
                    f"{names_text([n + '.grad' for n in hit])} "
                    f"{'was' if len(hit) == 1 else 'were'} computed from corrupted inputs: "
                    f"{bump.event.node} used {bump.event.tensor} as changed in step {bump.index} "
                    f"(line {bump.line}), not the values of the forward pass.",
                    hit,
                    severity="warning",
                )
            )
            f.state.corrupted.remove(bump)
    return out
