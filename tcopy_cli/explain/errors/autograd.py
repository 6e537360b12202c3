"""Autograd errors: backward, leaves and non-leaves, requires_grad, deepcopy, NumPy."""

from __future__ import annotations

import re

from tcopy_cli.explain.errors.catalogue import entry
from tcopy_cli.explain.errors.context import CallSite, ErrorContext, listed, parse_statement, shape_text

_BACKWARD = ("backward", "torch.autograd.backward", "grad", "torch.autograd.grad")


def _backward(ctx: ErrorContext) -> tuple[CallSite | None, str]:
    """The backward call and what it was called on (``loss``, ``(a * 2).sum()``)."""
    call = ctx.call(*_BACKWARD)
    if call is None:
        return None, "the tensor"
    if call.receiver is not None and call.name == "backward" and call.receiver not in ("torch.autograd", "autograd"):
        return call, call.receiver
    return call, call.arg(0, "outputs") or call.arg(0, "tensors") or "the tensor"


@entry("autograd.backward-twice", r"Trying to backward through the graph a second time")
def backward_twice(ctx: ErrorContext, m: re.Match[str]) -> str:
    call, root = _backward(ctx)
    earlier = [i for i in ctx.state.backward_steps if ctx.step is None or i < ctx.step.index]
    first = ctx.state.origins.get(earlier[-1]) if earlier else None
    said = f"{call.text if call else 'backward()'} on {ctx.where} goes back through the graph behind {root}"
    if first is not None:
        said += f", but the backward in {first} already went through it and freed the values its nodes had saved"
    else:
        said += ", but an earlier backward already went through that graph and freed the values its nodes had saved"
    if first is not None and first.source.endswith("backward()"):
        again = first.source[: -len("backward()")] + "backward(retain_graph=True)"
        fix = f"Fix: write line {first.line} as {again} if you really need a second backward, "
    else:
        fix = "Fix: pass retain_graph=True to the first backward() if you really need a second one, "
    return said + ". " + fix + f"or compute {root} again (run its forward statements) before this backward."


@entry("autograd.no-grad-fn", r"element 0 of tensors does not require grad and does not have a grad_fn")
def no_grad_fn(ctx: ErrorContext, m: re.Match[str]) -> str:
    call, root = _backward(ctx)
    name = ctx.tensor(root)
    head = (
        f"{call.text if call else 'backward()'} on {ctx.where}: {root} has "
        "no grad_fn, so nothing leads back to a tensor that requires grad."
    )
    if ctx.step is not None and not ctx.step.grad_enabled:
        return head + (
            " This statement ran with gradients disabled (inside "
            "torch.no_grad()). Fix: compute it outside the no_grad block."
        )
    inputs = ctx.tensors_in(root) if name is None else []
    origin = ctx.bound_at(name) if name is not None else None
    if origin is not None:
        tree = parse_statement(origin.source)
        inputs = [n for n in ctx.tensors_in(origin.source) if n != name] if tree is not None else []
        head += f" {name} was made at line {origin.line} ({origin.source})"
        cut = [n for n in inputs if ctx.record(n).requires_grad]
        if cut:
            return head + (
                f" from {listed(cut)}, which require{'s' if len(cut) == 1 else ''} grad: that statement cut the graph "
                "(torch.no_grad(), .detach(), .data or an integer result). Fix: compute it without detaching, "
                "outside no_grad."
            )
        head += "."
    plain = [n for n in inputs if not ctx.record(n).requires_grad]
    if plain:
        leaf = plain[0]
        return head + (
            f" None of {listed(plain)} requires grad. Fix: create the input you want gradients for with "
            f"requires_grad=True (e.g. {leaf}.requires_grad_() before "
            f"computing {root}) — only floating-point leaves can."
        )
    return head + " Fix: create the inputs you want gradients for with requires_grad=True before computing it."


@entry("autograd.scalar-output", r"grad can be implicitly created only for (?:real )?scalar outputs")
def scalar_output(ctx: ErrorContext, m: re.Match[str]) -> str:
    call, root = _backward(ctx)
    name = ctx.tensor(root)
    size = f"{root} has shape {ctx.shape(name)}" if name else f"{root} has more than one element"
    return (
        f"{call.text if call else 'backward()'} on {ctx.where}: {size}, and backward() without a gradient "
        f"argument needs a single-element tensor (d{root}/d{root} = 1 only makes sense for a scalar). "
        f"Fix: reduce it first, {root}.sum().backward() (or .mean()), or pass the gradient of each element: "
        f"{root}.backward(torch.ones_like({root}))."
    )


def _written(ctx: ErrorContext) -> tuple[CallSite | None, str | None]:
    """The in-place operation of the statement and the tensor it writes into."""
    call = ctx.call(in_place=True)
    if call is None:
        return None, None
    return call, ctx.tensor(call.receiver)


def _base_of(ctx: ErrorContext, name: str) -> str | None:
    """A leaf requiring grad whose memory ``name`` lies in (its base, for a view)."""
    r = ctx.record(name)
    for other in ctx.leaves_requiring_grad():
        if other != name and ctx.record(other).storage == r.storage:
            return other
    return None


@entry("inplace.view-of-leaf", r"a view of a leaf Variable that requires grad is being used in an in-place operation")
def view_of_leaf(ctx: ErrorContext, m: re.Match[str]) -> str:
    call, name = _written(ctx)
    if call is None or name is None:
        return (
            "An in-place operation writes into a view of a leaf tensor that requires grad. Fix: do it under "
            "torch.no_grad(), or clone() the view first."
        )
    base = _base_of(ctx, name)
    if base is None and ctx.record(name).is_leaf:  # bad[0, 0] = 1.0: the index made the view of the leaf
        return (
            f"{call.text} on {ctx.where} writes through a view (the index or slice) into {name}, a leaf that "
            f"requires grad{ctx.made_at(name)}. Changing a leaf in place would change it behind autograd's back. "
            f"Fix: under 'with torch.no_grad():' if you mean to change {name} (an update), or work on a copy: "
            f"{name} = {name}.clone() before {call.text}."
        )
    of = f"a view of {base}, a leaf that requires grad" if base else "a view of a leaf that requires grad"
    return (
        f"{call.text} on {ctx.where} writes into {name}, {of}{ctx.made_at(name)}. Writing through the view "
        f"would change {base or 'the leaf'} itself behind autograd's back. Fix: under 'with torch.no_grad():' if "
        f"you mean to change {base or 'the leaf'} (an update), or work on a copy: {name} = {name}.clone() before "
        f"{call.text}."
    )


@entry(
    "autograd.float-only",
    r"[Oo]nly Tensors of floating point (?:and complex )?dtype can require gradients",
    "RuntimeError",
)
def float_only(ctx: ErrorContext, m: re.Match[str]) -> str:
    call = ctx.call("requires_grad_", "setattr") or ctx.call()
    target = call.receiver if call is not None and call.name in ("requires_grad_", "setattr") else None
    if target is None and ctx.tree is not None and call is not None:
        target = _assigned(ctx)
    who = target or "the tensor"
    dtype = f" ({ctx.record(who).dtype})" if who in ctx.tensors else " (an integer or bool dtype)"
    fix = (
        f"{who} = {who}.float().requires_grad_()"
        if who in ctx.tensors
        else "create it as float: dtype=torch.float32, or write 1.0 instead of 1"
    )
    return (
        f"{call.text if call else 'This statement'} on {ctx.where} asks for gradients of {who}{dtype}. Gradients "
        f"exist only for floating-point and complex tensors. Fix: {fix}."
    )


def _assigned(ctx: ErrorContext) -> str | None:
    import ast

    tree = ctx.tree
    if isinstance(tree, ast.Module) and tree.body and isinstance(tree.body[0], ast.Assign):
        return ast.unparse(tree.body[0].targets[0])
    return None


@entry(
    "autograd.unused-input", r"The differentiated Tensor at index (?P<i>\d+) appears to not have been used in the graph"
)
def unused_input(ctx: ErrorContext, m: re.Match[str]) -> str:
    call = ctx.call("grad", "torch.autograd.grad")
    inputs = ctx.tensors_in(call.arg(1, "inputs")) if call else []
    i = int(m["i"])
    who = inputs[i] if i < len(inputs) else f"input {i}"
    out = call.arg(0, "outputs") if call else "the output"
    return (
        f"{call.text if call else 'autograd.grad'} on {ctx.where}: {out} does not depend on {who}, so there is no "
        f"gradient of {out} with respect to {who}. Fix: leave {who} out of the inputs, or pass allow_unused=True "
        f"(its gradient comes back as None)."
    )


@entry(
    "autograd.gradient-shape",
    r"Mismatch in shape: grad_output\[0\] has a shape of torch\.Size\(\[(?P<g>[^\]]*)\]\) and output\[0\] has a shape "
    r"of torch\.Size\(\[(?P<o>[^\]]*)\]\)",
)
def gradient_shape(ctx: ErrorContext, m: re.Match[str]) -> str:
    call, root = _backward(ctx)
    grad = (
        call.arg(0, "gradient") if call and call.name == "backward" else (call.arg(2, "grad_outputs") if call else None)
    )
    return (
        f"{call.text if call else 'backward'} on {ctx.where}: the "
        f"gradient {grad or ''} has shape ({m['g']}) but {root} "
        f"has shape ({m['o']}); it must give one value per element of {root}. Fix: "
        f"{root}.backward(torch.ones_like({root})) or a tensor of {root}'s shape."
    )


@entry("autograd.grad-assign", r"attempting to assign a gradient (?:of size|with dtype) '(?P<got>[^']*)' to a tensor")
def grad_assign(ctx: ErrorContext, m: re.Match[str]) -> str:
    call = ctx.call("setattr")
    who = call.receiver if call and call.receiver else "the tensor"
    if who in ctx.tensors:
        r = ctx.record(who)
        want = f"{who} is {shape_text(r.shape)} {r.dtype}"
    else:
        want = "the tensor's shape and dtype differ"
    return (
        f"{call.text if call else '.grad = ...'} on {ctx.where}: "
        f"a .grad must have its tensor's shape and dtype; {want}, "
        f"the new gradient is {m['got']}. Fix: assign torch.zeros_like({who}) (or a tensor of that shape and dtype), "
        f"or None to clear it."
    )


_DOTTED = re.compile(r"[A-Za-z_][\w.]*")


@entry("grad.none", r"'NoneType' object has no attribute '(?P<attr>\w+)'", "AttributeError")
def grad_none(ctx: ErrorContext, m: re.Match[str]) -> str:
    text = ctx.step.source if ctx.step is not None else ""
    # The dotted name before ".grad.ATTR", read from each dotted word (a pattern that finds it in one go
    # backtracks over a long name).
    suffix = ".grad." + m["attr"]
    who = next((w[: w.find(suffix)] for w in _DOTTED.findall(text) if w.find(suffix) > 0), None)
    if who is None or who not in ctx.tensors:
        return f"A value on {ctx.where} is None, and None has no attribute '{m['attr']}'."
    r = ctx.record(who)
    if not r.requires_grad:
        why = f"{who} does not require grad, so backward never gives it a gradient"
        fix = f"create {who} with requires_grad=True"
    elif not r.is_leaf:
        why = f"{who} is not a leaf (grad_fn {r.grad_fn}): autograd keeps .grad only for leaves"
        fix = f"call {who}.retain_grad() before backward(), or read the leaf's .grad"
    else:
        why = f"no backward() has reached {who} yet (or its .grad was set to None)"
        fix = f"call backward() on a result computed from {who} first, or guard with 'if {who}.grad is not None:'"
    return f"{who}.grad is None on {ctx.where}: {why}. Fix: {fix}."


@entry(
    "autograd.out-argument",
    r"(?P<fn>\w+)\(\): functions with out=\.\.\. arguments don't support automatic differentiation, but one of "
    r"the arguments requires grad",
)
def out_argument(ctx: ErrorContext, m: re.Match[str]) -> str:
    call = next((c for c in ctx.calls if any(a.startswith("out=") for a in c.args)), None)
    out = call.arg(99, "out") if call is not None else None
    inputs = [n for n in ctx.tensors_in(*call.inputs) if n != out] if call is not None else []
    grads = [n for n in inputs if ctx.record(n).requires_grad]
    op = call.text if call is not None else f"{m['fn']}(..., out=...)"
    who = f"{listed(grads)} {'requires' if len(grads) == 1 else 'require'} grad" if grads else "an input requires grad"
    plain = call.text.replace(f", out={out}", "") if call is not None and out else f"{m['fn']}(...)"
    target = out or "the out= tensor"
    return (
        f"{op} on {ctx.where}: {who}, and autograd does not differentiate a call that writes its result into a "
        f"tensor given as out=, so torch refuses it. Fix: {target} = {plain} (a new tensor in the graph), or run "
        f"it under torch.no_grad() if no gradient should flow through it."
    )
