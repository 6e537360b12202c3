"""Tensor hooks and ``retain_grad``: what changes the gradients a backward leaves.

The operation record names the function a ``register_hook`` call put on a tensor (its
``detail["hook"]``); a later step's ``hooks`` are the functions torch called back during it,
and ``hooks_replaced`` those that returned a tensor other than the gradient they were given
(measured when the function returned). A hook that did so replaced the gradient flowing
through its tensor: the note names it, the line that registered it, and the tensors whose
``.grad`` got what it returned.
"""

from __future__ import annotations

from dataclasses import dataclass

from tcopy_cli.explain.facts import Origin, StepFacts, names_text, note
from tcopy_cli.trace.records import Note
from tcopy_cli.trace.values import code_span

_KEY = "hooks"


@dataclass(frozen=True)
class Registration:
    """A function put on a tensor as a hook, and where."""

    function: str
    tensor: str
    call: str
    origin: Origin
    after_accumulation: bool


def hook_notes(f: StepFacts) -> list[Note]:
    """Hooks registered (what they will do), hooks that replaced a gradient in this step, ``retain_grad``."""
    known = f.state.extra.setdefault(_KEY, {})
    assert isinstance(known, dict)
    out: list[Note] = []
    for op in f.step.ops:
        if op.error is not None:
            continue
        target = op.inputs[0].name if op.inputs and op.inputs[0].role == "self" else None
        if target is None or target not in f.tensors:
            continue
        if "hook" in op.detail:
            reg = Registration(op.detail["hook"], target, op.call, Origin.of(f.step), op.function != "register_hook")
            known.setdefault(reg.function, []).append(reg)
            out.append(_registered(reg, op.index))
        elif op.function == "retain_grad":
            out.append(_retained(f, target, op.call, op.index))
    for function in f.step.hooks_replaced:
        regs = [r for r in known.get(function, []) if not r.after_accumulation]
        if regs:
            out.append(_replaced(f, function, regs))
    return out


def _registered(reg: Registration, op: int) -> Note:
    t, fn = reg.tensor, reg.function
    if reg.after_accumulation:
        text = (
            f"{code_span(reg.call)} put {fn} on {t}: from now on, each backward calls {fn}({t}) after it has added "
            f"into {t}.grad (what it returns is ignored; a write into {t}.grad there changes it)."
        )
    else:
        text = (
            f"{code_span(reg.call)} put {fn} on {t}: from now on, each backward that reaches {t} calls {fn} with "
            f"the gradient flowing into {t}; if {fn} returns a tensor, that tensor replaces the gradient (the "
            f"handle's .remove() takes the hook off)."
        )
    return note("hook.registered", text, [t], op=op)


def _replaced(f: StepFacts, function: str, regs: list[Registration]) -> Note:
    """``function`` ran during this step's backward and returned a tensor of its own."""
    on = list(dict.fromkeys(r.tensor for r in regs if r.tensor in f.tensors))
    where = names_text([f"{code_span(r.call)} (line {r.origin.line})" for r in regs])
    leaves = [n for n in on if f.tensors[n].is_leaf]
    inner = [n for n in on if not f.tensors[n].is_leaf]
    reached = list(
        dict.fromkeys(
            m for n in inner for m in f.tensors[n].reaches if f.tensors[m].is_leaf and f.tensors[m].requires_grad
        )
    )
    got = [*leaves, *reached]
    tail = (
        f" {names_text([g + '.grad' for g in got])} got what {function} returned (or what followed from it) "
        f"instead of the gradient the graph alone gives."
        if got
        else ""
    )
    return note(
        "hook.replaced-grad",
        f"During this backward torch called {function}, the hook {where} put on {names_text(on)}, and it returned a "
        f"tensor of its own: that tensor replaced the gradient flowing through {names_text(on)}.{tail}",
        [*on, *got],
    )


def _retained(f: StepFacts, t: str, call: str, op: int) -> Note:
    r = f.tensors[t]
    if r.is_leaf:
        text = (
            f"{code_span(call)} changed nothing: {t} is a leaf, and backward keeps a leaf's gradient in .grad anyway."
        )
    else:
        text = (
            f"{code_span(call)}: {t} is not a leaf (grad_fn {r.grad_fn}), so backward would not keep its gradient; "
            f"from now on each backward that goes through {t} also stores the gradient flowing through it in "
            f"{t}.grad (adding to it, as for a leaf)."
        )
    return note("grad.retained", text, [t], op=op)
