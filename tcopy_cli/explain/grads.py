"""Rules about ``.grad``: what backward put there, accumulation, resets, corrupted results.

``grad_changes`` counts backward passes per tensor across steps (ExplainState); the
rules after it read its notes (by kind) rather than compare the records again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from tcopy_cli.explain.effects import written_tensor
from tcopy_cli.explain.facts import Findings, StepFacts, agree, names_text, note
from tcopy_cli.trace.records import RESET_CALLS, Note, OpRecord, TensorRecord
from tcopy_cli.trace.values import code_span, format_nested

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
    added into a grad is read from its version counter (one in-place add per pass). Where
    the counter moved more than the backward calls recorded, or the grad is a new tensor
    the record does not account for, the note says what was measured and no more, and the
    count of passes since the last reset is unknown until the next reset."""
    found = Findings()
    counts = f.state.backward_counts
    stepped: dict[int, int | None] = {}
    run = _Record.of(f)
    received: dict[str, tuple[int, str]] = {}  # name: (tensor, preview) of a grad backward put into an empty one
    for name, r in f.tensors.items():
        old = f.before.get(name)
        if old is None or old.object_id != r.object_id:
            continue
        g, og = r.grad, old.grad
        if _grad_assigned(f, name) and not run.backwards:  # x.grad = ...: the record's note tells it
            counts[r.object_id] = 0 if g is None else 1
            continue
        if g is None and og is not None:
            found.group("grad.reset", name)
            counts[r.object_id] = 0
        elif g is not None and og is None:
            if run.backwards and run.last_reset > run.last_backward and g.values is not None and _all_zero(g.values):
                counts[r.object_id] = 0
                reset = run.ops[run.last_reset].call
                text = f"backward put a gradient into {name}.grad, then `{reset}` zeroed it: {_ended(g.preview)}"
                found.add([note("grad.zeroed", text, [name])])
            elif run.backwards:
                counts[r.object_id] = 1
                received[name] = (r.object_id, g.preview)
                found.group("grad.received", name)
            else:
                found.add([note("grad.written", f"{name}.grad now holds {g.preview}, though no backward ran.", [name])])
        elif g is not None and og is not None and _changed(g, og):
            kind, text, count = _moved(f, name, r, og, run)
            if kind == "grad.zeroed":
                found.group(kind, name)
                counts[r.object_id] = 0
                continue
            if count == "keep":  # a write, not a pass: the passes since the last reset stay as they were
                found.add([note(kind, text, [name])])
                continue
            if kind == "grad.accumulated":
                # One tensor under several names (an argument and the caller's name) counts once.
                if r.object_id in stepped:
                    count = stepped[r.object_id]
                else:
                    before = counts.get(r.object_id, 1)
                    count = None if before is None or count is None else before + count
                again = (
                    f" Gradients accumulate: this is backward #{count} into {name}.grad since it was last reset."
                    if count is not None
                    else " Gradients accumulate."
                )
                text += again
            counts[r.object_id] = stepped[r.object_id] = count
            found.add([note(kind, text, [name])])
    return found.notes(
        lambda kind, names: _received(names, received) if kind == "grad.received" else _cleared(f, kind, names)
    )


@dataclass(frozen=True)
class _Record:
    """Where the step's operation record has backward calls and grad resets (``zero_grad()``,
    ``x.grad = ...``), as positions in ``ops``."""

    ops: list[OpRecord]
    backwards: list[int]
    resets: list[int]

    @staticmethod
    def of(f: StepFacts) -> _Record:
        ops = [op for op in f.step.ops if op.error is None]
        calls = [(i, op.function) for i, op in enumerate(ops) if op.kind == "call"]
        assigned = [i for i, op in enumerate(ops) if _sets_grad(op)]
        resets = sorted([*assigned, *(i for i, fn in calls if fn in RESET_CALLS)])
        return _Record(ops, [i for i, fn in calls if fn == "backward"], resets)

    @property
    def last_backward(self) -> int:
        return max(self.backwards, default=-1)

    @property
    def last_reset(self) -> int:
        return max(self.resets, default=-1)


def _moved(
    f: StepFacts, name: str, r: TensorRecord, og: TensorRecord, run: _Record
) -> tuple[str, str, int | Literal["keep"] | None]:
    """(kind, text, passes) for a grad that changed (``r.grad``, from ``og``): ``passes``
    backward passes since the last reset for a reset, added to the count for an
    accumulation, None where unknown, ``keep`` for a write that is no pass."""
    g = r.grad
    assert g is not None
    inc = _subtract(g.values, og.values)
    inc_text = f" (+{format_nested(inc)})" if inc is not None and not _contains_none(inc) else ""
    change = f"{og.preview} → {g.preview}{inc_text}"
    same = g.storage == og.storage
    zeros = g.values is not None and _all_zero(g.values)
    written = _write_into(f, name, r, run.ops)
    if written is not None and written[1].function == "zero_":  # x.grad.zero_() resets it too
        run = _Record(run.ops, run.backwards, sorted([*run.resets, written[0]]))
    last_backward, last_reset = run.last_backward, run.last_reset
    if not run.backwards:
        # zero_() on a grad already zero is zeroing it too (not "changed: [0., 0.] → [0., 0.]")
        again = written is not None and written[1].function == "zero_"
        if same and ((zeros and (again or not _all_zero(og.values))) or (g.values is None and last_reset >= 0)):
            return "grad.zeroed", "", 0
        if not same and g.object_id == og.object_id and g.object_id:
            # the grad kept its object but not its memory: ``.data`` swapped under it (a module's .double(), .to())
            dtype = f", {g.dtype} (was {og.dtype})" if g.dtype != og.dtype else ""
            text = (
                f"{name}.grad is the same tensor object on other memory now ({g.storage}){dtype}: its memory was "
                f"swapped, not added to, and no backward ran; values {og.preview} → {g.preview}."
            )
            return "grad.written", text, "keep"
        if not same:
            text = f"{name}.grad is another tensor now ({g.storage}): {change}, though no backward ran."
            return "grad.written", text, 1  # as for `x.grad = t`: the next backward adds to it
        how = f"{code_span(written[1].call)} wrote into it in place" if written is not None else "no backward ran"
        return "grad.written", f"{name}.grad changed: {change}; {how}. A backward adds to the values it holds.", "keep"
    if last_reset > last_backward and (zeros or g.values is None):
        return "grad.zeroed", "", 0  # backward, then zero_grad(set_to_none=False) in one step
    delta = g.version - og.version if same else None
    extra = delta is not None and delta > len(run.backwards)  # something besides backward wrote it
    if 0 <= last_reset < last_backward and (not same or extra):
        how = "dropped" if not same else "zeroed"
        text = (
            f"{code_span(run.ops[last_reset].call)} in this step {how} {name}.grad ({og.preview}), then backward "
            f"put a new gradient into it: {_ended(g.preview)}"
        )
        return "grad.received", text, 1
    if written is not None or extra:
        what = (
            f"{code_span(written[1].call)} wrote into it"
            if written is not None
            else (
                f"something besides backward wrote into it (its version counter moved {delta} times, "
                f"for {len(run.backwards)} backward call{'s' if len(run.backwards) > 1 else ''}"
                + (f"; torch called back {names_text(f.step.hooks)} during it)" if f.step.hooks else ")")
            )
        )
        return "grad.written", f"{name}.grad changed: {change}; backward ran, and {what}.", None
    if not same:
        text = (
            f"backward ran and {name}.grad is a new tensor ({g.storage}): {_ended(change)} Backward makes a "
            f"new grad when it adds out of place (create_graph=True) or when the grad was dropped during the step."
        )
        return "grad.written", text, None
    passes = max(1, min(delta or 0, len(run.backwards)))
    several = f"{passes} backward passes added" if passes > 1 else "backward added"
    return "grad.accumulated", f"{several} into {name}.grad: {_ended(change)}", passes


# Several gradients' values go into their note where each is at most this long, and all together at most ALL_SHORT.
SHORT, ALL_SHORT = 24, 72


def _received(names: list[str], received: dict[str, tuple[int, str]]) -> Note:
    """The grads that backward put into tensors that had none, in one note: with their values
    where they are short, else by name (each row's grad cell shows its own). A tensor under
    several names (an argument and the caller's name) is told once, by its first name."""
    first: dict[int, str] = {}
    also: dict[str, list[str]] = {}
    for n in names:
        lead = first.setdefault(received[n][0], n)
        also.setdefault(lead, []).extend([n] if n != lead else [])
    shown = [(n, received[n][1]) for n in also]
    if len(shown) == 1:
        text = f"backward put a gradient into {shown[0][0]}.grad: {_ended(shown[0][1])}"
    elif all(len(p) <= SHORT for _, p in shown) and sum(len(p) for _, p in shown) <= ALL_SHORT:
        text = f"backward put gradients into {names_text([f'{n}.grad ({p})' for n, p in shown])}."
    else:
        text = f"backward put gradients into {names_text([n + '.grad' for n, _ in shown])}."
    pairs = [(others[0], lead) for lead, others in also.items() if len(others) == 1]
    if len(pairs) >= 2:  # one other name each (a module under two names): one sentence, in order
        text += (
            f" {names_text([o for o, _ in pairs])} are {names_text([lead for _, lead in pairs])} under other names,"
            " in that order."
        )
    for lead, others in also.items():
        if others and (len(pairs) < 2 or len(others) > 1):
            text += f" {names_text(others)} {agree(others, 'is', 'are')} {lead} under another name."
    return note("grad.received", text, names)


def _cleared(f: StepFacts, kind: str, names: list[str]) -> Note:
    """The grads reset to None (``grad.reset``) or zeroed in place (``grad.zeroed``) in the step."""
    grads = names_text([n + ".grad" for n in names])
    were = agree(names, "was", "were")
    if kind == "grad.zeroed":
        before = [f.before[n].grad for n in names if n in f.before]
        if before and all(g is not None and g.values is not None and _all_zero(g.values) for g in before):
            # no value moved: the table says no tensor changed, and the note must not say otherwise
            its = agree(names, "its", "their")
            return note(kind, f"{grads} {were} zeroed in place again: {its} values were 0 already.", names)
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
    return any(op.error is None and _sets_grad(op) and written_tensor(f, op) == name for op in f.step.ops)


def _sets_grad(op: OpRecord) -> bool:
    """The operation is an attribute write that replaced a ``.grad`` (``x.grad = t``, ``= None``)."""
    return op.kind == "setattr" and "grad" in op.detail.get("replaced", [])


def _ended(preview: str) -> str:
    """A preview closing a sentence: ``20.`` ends it as it is (no ``20..``)."""
    return preview if preview.endswith(".") else preview + "."


def _write_into(f: StepFacts, name: str, r: TensorRecord, ops: list[OpRecord]) -> tuple[int, OpRecord] | None:
    """The recorded in-place write into ``name.grad`` in this step (``w.grad.add_(1)``,
    ``w.grad += 5``, ``p.grad.data.zero_()`` with ``p`` the same tensor, ``g.mul_(2)`` on
    ``g = w.grad``), with its position in ``ops``; None if there is none.

    An input counts where its version counter moved in the operation and it is the grad:
    written as ``X.grad`` (or a view or ``.data`` of it) with ``X`` this tensor under any
    name, or a name on the grad's storage.
    """
    grad = r.grad
    assert grad is not None
    for index, op in enumerate(ops):
        for i in op.bumped:
            if i >= len(op.inputs):
                continue
            inp = op.inputs[i]
            held = f.tensors.get(inp.name) if inp.name is not None else None
            if held is not None and held.storage == grad.storage and held.device == grad.device:
                return index, op
            m = _GRAD_EXPR.match(inp.expr)
            owner = f.tensors.get(m[1]) if m is not None else None
            if owner is not None and owner.object_id == r.object_id:
                return index, op
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


def grad_call(f: StepFacts) -> list[Note]:
    """``torch.autograd.grad(y, x)``: the gradients are returned, and ``x.grad`` is left as it was."""
    out = []
    for op in f.step.ops:
        if op.error is not None or op.kind != "call" or op.function != "grad":
            continue
        wrt = [i.name for i in op.inputs if i.role.startswith(("arg1", "inputs=")) and i.name in f.tensors]
        left = [
            n
            for n in dict.fromkeys(wrt)
            if n is not None and n in f.before and _same_grad(f.tensors[n].grad, f.before[n].grad)
        ]
        if not left:
            continue
        given = [r.name for r in op.results if r.name is not None]
        returned = f" (as {names_text(given)})" if given else ""
        states = names_text([f"{n}.grad" for n in left])
        before = f.before[left[0]].grad
        was = f" ({before.preview})" if before is not None and len(left) == 1 else " (None)" if len(left) == 1 else ""
        out.append(
            note(
                "grad.returned",
                f"{code_span(op.call)} returned the gradient{returned} and left {states} as "
                f"{agree(left, 'it was', 'they were')}{was}: unlike backward(), torch.autograd.grad does not add "
                f"into .grad.",
                left,
                op=op.index,
            )
        )
    return out


def _same_grad(g: TensorRecord | None, og: TensorRecord | None) -> bool:
    """The same .grad before and after (both none, or one tensor with the same values and version)."""
    if g is None or og is None:
        return g is None and og is None
    return g.object_id == og.object_id and g.version == og.version and g.values == og.values
