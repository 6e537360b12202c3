"""Losses and optimizers: targets of the wrong dtype, shape or range; parameters an optimizer refuses."""

from __future__ import annotations

import re

from tcopy_cli.explain.errors.catalogue import entry
from tcopy_cli.explain.errors.context import CallSite, ErrorContext, listed

_LOSSES = (
    "cross_entropy",
    "F.cross_entropy",
    "nll_loss",
    "F.nll_loss",
    "binary_cross_entropy",
    "F.binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "F.binary_cross_entropy_with_logits",
    "mse_loss",
    "F.mse_loss",
)


def _loss(ctx: ErrorContext) -> tuple[CallSite | None, str | None, str | None]:
    """The loss call, its input and its target (tensor names), for F.* calls and loss modules alike."""
    call = ctx.call(*_LOSSES)
    if call is None:  # a loss module: criterion(out, target)
        call = next((c for c in ctx.calls if c.receiver is None and len(ctx.tensors_in(*c.args)) >= 2), None)
    if call is None:
        return None, None, None
    return call, ctx.tensor(call.arg(0, "input")), ctx.tensor(call.arg(1, "target"))


@entry(
    "loss.target-dtype",
    r"expected target dtype to be Long or Byte, but got (?P<got>\w+)|expected scalar type Long but found (?P<old>\w+)",
)
def target_dtype(ctx: ErrorContext, m: re.Match[str]) -> str:
    call, x, t = _loss(ctx)
    if call is None or t is None:
        return (
            "The loss expects class indices as an integer (Long) target tensor. Fix: target.long(), or give class "
            "probabilities with the same shape as the input."
        )
    tr = ctx.record(t)
    shape = f"same shape as {x} ({ctx.shape(x)})" if x else "the input's shape"
    return (
        f"{call.text} on {ctx.where}: {t} is {tr.dtype} with shape {ctx.shape(t)}. A target of shape {ctx.shape(t)} "
        f"is read as one class index per sample, and indices must be integers. Fix: {t}.long() if it holds class "
        f"numbers; class probabilities instead need the {shape}."
    )


@entry(
    "loss.multi-target",
    r"0D or 1D target tensor expected, multi-target not supported"
    r"|Expected floating point type for target with class probabilities, got (?P<got>\w+)",
)
def multi_target(ctx: ErrorContext, m: re.Match[str]) -> str:
    call, _, t = _loss(ctx)
    who = t or "the target"
    shape = f" {t} is {ctx.shape(t)} {ctx.record(t).dtype}" if t else ""
    return (
        f"{call.text if call else 'The loss'} on {ctx.where}:{shape}. A target can be one class index per sample "
        f"(integers, shape (N,)) or class probabilities (floats, the input's shape); this one is neither. If {who} is "
        f"one-hot, use {who}.argmax(dim=1) for class indices; if it holds probabilities, use {who}.float()."
    )


@entry("loss.target-bounds", r"Target (?P<t>-?\d+) is out of bounds", "IndexError")
def target_bounds(ctx: ErrorContext, m: re.Match[str]) -> str:
    call, x, t = _loss(ctx)
    classes = ctx.record(x).shape[1] if x and len(ctx.record(x).shape) > 1 else None
    have = (
        f"{x} is {ctx.shape(x)}: {classes} classes, indices 0..{classes - 1}"
        if x and classes
        else "the input's class count"
    )
    return (
        f"{call.text if call else 'The loss'} on {ctx.where}: {t or 'the target'} contains {m['t']}, but {have}. Fix: "
        f"class indices start at 0 (labels 1..C need {t or 'target'} - 1), or give the model more outputs."
    )


def _optimizer(ctx: ErrorContext) -> CallSite | None:
    return next(
        (c for c in ctx.calls if c.name[:1].isupper() and c.callee.startswith(("optim.", "torch.optim."))), None
    )


@entry("optim.non-leaf", r"can't optimize a non-leaf Tensor", "ValueError")
def optim_non_leaf(ctx: ErrorContext, m: re.Match[str]) -> str:
    call = _optimizer(ctx)
    params = ctx.tensors_in(call.arg(0, "params")) if call else ctx.used
    bad = [n for n in params if not ctx.record(n).is_leaf]
    if not bad:
        return (
            "An optimizer updates leaves in place; a result of an operation (with a "
            "grad_fn) can't be one. Fix: pass the leaf tensors (model.parameters())."
        )
    b = bad[0]
    leaves = [n for n in ctx.record(b).reaches if ctx.record(n).is_leaf and n not in params]
    hint = f" Did you mean {listed(leaves)}, the leaf {b} was computed from?" if leaves else ""
    return (
        f"{call.text if call else 'The optimizer'} on {ctx.where}: {listed(bad)} {'is' if len(bad) == 1 else 'are'} "
        f"not a leaf ({b} has grad_fn {ctx.record(b).grad_fn}){ctx.made_at(b)}. An optimizer changes its tensors in "
        f"place and needs their .grad, which only leaves get.{hint} Fix: pass the leaves, or make {b} one: "
        f"{b} = {b}.detach().requires_grad_()."
    )


@entry("optim.empty", r"optimizer got an empty parameter list", "ValueError")
def optim_empty(ctx: ErrorContext, m: re.Match[str]) -> str:
    call = _optimizer(ctx)
    params = call.arg(0, "params") if call else None
    if params and params.endswith(".parameters()"):
        owner = params[: -len(".parameters()")]
        return (
            f"{call.text if call else 'The optimizer'} on {ctx.where}: {owner} has no parameters, so there is nothing "
            f"to optimize. Its layers must be attributes set in __init__ (self.fc = nn.Linear(...)) after "
            f"super().__init__(); layers kept in a plain list are not registered (use nn.ModuleList)."
        )
    return (
        f"{call.text if call else 'The optimizer'} on {ctx.where}: the parameter list {params or ''} is empty. Fix: "
        f"pass the tensors to optimize, e.g. [w, b] or model.parameters()."
    )
