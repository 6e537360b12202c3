"""Shape errors: matrix products, broadcasting, view/reshape, expand, cat/stack, dims and indices."""

from __future__ import annotations

import re

from tcopy_cli.explain.errors.catalogue import entry
from tcopy_cli.explain.errors.context import CallSite, ErrorContext, listed, shape_text

_PRODUCTS = ("matmul", "mm", "bmm", "mv", "dot", "linear", "F.linear", "addmm", "baddbmm", "einsum")


def _module_call(ctx: ErrorContext) -> tuple[CallSite, str] | None:
    """A call of a script module that has a weight (``lin(x)``), with its weight's name."""
    for c in ctx.calls:
        weight = c.callee + ".weight"
        if weight in ctx.tensors:
            return c, weight
    return None


@entry("shape.matmul", r"mat1 and mat2 shapes cannot be multiplied \((?P<a>\d+)x(?P<k>\d+) and (?P<j>\d+)x(?P<b>\d+)\)")
def matmul(ctx: ErrorContext, m: re.Match[str]) -> str:
    module = _module_call(ctx)
    if module is not None:
        call, weight = module
        x = ctx.tensor(call.arg(0))
        w = ctx.record(weight)
        expects = w.shape[-1]
        got = ctx.record(x).shape[-1] if x else int(m["k"])
        who = f"{x} is {ctx.shape(x)}" if x else f"its input has {got} features"
        return (
            f"{call.text} on {ctx.where}: {call.callee} multiplies its input by {weight}.T, and {weight} is "
            f"{shape_text(w.shape)}, so {call.callee} expects {expects} features in the input's last dim; {who}. "
            f"Fix: make the layer take {got} inputs (nn.Linear({got}, {w.shape[0]})), or give it an input whose last "
            f"dim is {expects}."
        )
    op = ctx.call("matmul", "mm", "linear", "F.linear", "addmm")
    if op is None or len(op.inputs) < 2:
        return (
            f"The matrix product on {ctx.where} needs the first matrix's columns ({m['k']}) to equal the second's "
            f"rows ({m['j']}). Fix: transpose or reshape one side so the inner dims agree."
        )
    left, right = op.inputs[-2:] if op.name == "addmm" else op.inputs[:2]
    # A named operand's own shape; an expression's is the one torch reports (mat1, mat2).
    a = ctx.record(left).shape if left in ctx.tensors else [int(m["a"]), int(m["k"])]
    b = ctx.record(right).shape if right in ctx.tensors else [int(m["j"]), int(m["b"])]
    said = (
        f"{op.text} on {ctx.where}: {left} is {shape_text(a)} and {right} is {shape_text(b)}; a matrix product needs "
        f"{left}'s last dim ({a[-1]}) to equal {right}'s first"
        f"{' (second-to-last)' if len(b) > 2 else ''} dim ({b[-2] if len(b) >= 2 else b[0]})."
    )
    guesses = []
    if len(b) == 2 and b[-1] == a[-1]:
        guesses.append(f"{left} @ {right}.T")
    if len(a) == 2 and len(b) >= 2 and a[0] == b[-2]:
        guesses.append(f"{left}.T @ {right}")
    if guesses:
        return said + f" Did you mean {' or '.join(guesses)}?"
    elementwise = f" (or use {left} * {right} for an elementwise product)" if _broadcastable(a, b) else ""
    return said + f" Fix: reshape or transpose one of them so the inner dims agree{elementwise}."


def _broadcastable(a: list[int], b: list[int]) -> bool:
    """Whether ``a * b`` would broadcast: each trailing dim pair equal, or one of them 1."""
    return all(x == y or 1 in (x, y) for x, y in zip(reversed(a), reversed(b)))


def _broadcast_names(ctx: ErrorContext) -> tuple[CallSite | None, str | None, str | None]:
    for c in ctx.calls:
        tensors = [t for t in (ctx.tensor(o) for o in c.operands) if t is not None]
        if len(tensors) >= 2:
            return c, tensors[0], tensors[1]
    call = ctx.calls[0] if ctx.calls else None
    used = ctx.used
    return call, (used[0] if used else None), (used[1] if len(used) > 1 else None)


@entry(
    "shape.broadcast",
    (
        r"The size of tensor a \((?P<a>\d+)\) must match the size of "
        r"tensor b \((?P<b>\d+)\) at non-singleton dimension (?P<d>\d+)"
    ),
)
def broadcast(ctx: ErrorContext, m: re.Match[str]) -> str:
    call, a, b = _broadcast_names(ctx)
    rule = (
        f"broadcasting lines the shapes up from the right, and dimension {m['d']} of the result is {m['a']} in one "
        f"and {m['b']} in the other (each must equal the other or be 1)"
    )
    if a is None or b is None:
        # Operands that are expressions, not names: the message's sizes are theirs, left then right.
        pair = next((c for c in ctx.calls if len(c.inputs) >= 2 and c.name not in ("getitem", "setitem")), None)
        if pair is None:
            return f"The operation on {ctx.where} combines tensors whose shapes don't broadcast: {rule}."
        left, right = pair.inputs[:2]
        return (
            f"{pair.text} on {ctx.where}: dimension {m['d']} of the broadcast result is {m['a']} in {left} and "
            f"{m['b']} in {right}; broadcasting lines the shapes up from the right, and each dim must be equal or "
            f"1. Fix: reshape, unsqueeze or slice {left} or {right} so the dims agree."
        )
    sa, sb = ctx.record(a).shape, ctx.record(b).shape
    said = (
        f"{call.text if call else a + ' with ' + b} on {ctx.where}: "
        f"{a} is {shape_text(sa)} and {b} is {shape_text(sb)}; {rule}."
    )
    if len(sa) == 1 and len(sb) == 1:
        return said + (
            f" Did you mean an outer combination, {a}[:, None] and {b}[None, "
            f":] (shape ({sa[0]}, {sb[0]}))? Otherwise make the lengths equal."
        )
    return said + f" Fix: reshape, unsqueeze or slice {a} or {b} so the dims agree."


@entry(
    "shape.in-place-broadcast",
    r"output with shape \[(?P<out>[^\]]*)\] doesn't match the broadcast shape \[(?P<full>[^\]]*)\]",
)
def in_place_broadcast(ctx: ErrorContext, m: re.Match[str]) -> str:
    call = ctx.call(in_place=True) or (ctx.calls[0] if ctx.calls else None)
    who = call.receiver if call and call.receiver else "the receiver"
    other = listed(ctx.tensors_in(*(call.args if call else ())))
    return (
        f"{call.text if call else 'The in-place call'} on {ctx.where} writes its result into {who} ({m['out']}), but "
        f"{who} broadcast with {other or 'the other operand'} has shape [{m['full']}]: an in-place result must fit "
        f"the tensor it is written into. Fix: compute a new tensor out of place, e.g. "
        f"{who}2 = {who} {_symbol(call)} {call.args[0] if call and call.args else '...'}."
    )


def _symbol(call: CallSite | None) -> str:
    symbols = {"add_": "+", "sub_": "-", "mul_": "*", "div_": "/"}
    return symbols.get(call.name, "+") if call else "+"


@entry("shape.view-stride", r"view size is not compatible with input tensor's size and stride")
def view_stride(ctx: ErrorContext, m: re.Match[str]) -> str:
    call = ctx.call("view")
    who = ctx.tensor(call.receiver) if call else None
    if call is None or who is None:
        return (
            f"view() on {ctx.where} can't reinterpret this tensor's memory in the new "
            "shape (it is not contiguous). Fix: use reshape(), which copies when it must."
        )
    r = ctx.record(who)
    args = ", ".join(call.args)
    return (
        f"{call.text} on {ctx.where}: {who} is {shape_text(r.shape)} with strides {tuple(r.stride)}{ctx.made_at(who)}, "
        f"so its elements are not laid out in memory in the order view({args}) needs, and a view can't move data. "
        f"Fix: {who}.reshape({args}) (copies when needed) or {who}.contiguous().view({args})."
    )


@entry("shape.invalid-size", r"shape '\[(?P<shape>[^\]]*)\]' is invalid for input of size (?P<n>\d+)")
def invalid_size(ctx: ErrorContext, m: re.Match[str]) -> str:
    call = ctx.call("view", "reshape", "torch.reshape", "expand_as", "view_as")
    who = (ctx.tensor(call.receiver) or ctx.tensor(call.arg(0))) if call else None
    target = [d.strip() for d in m["shape"].split(",") if d.strip()]
    n = int(m["n"])
    head = f"{call.text if call else 'The reshape'} on {ctx.where}"
    what = f"{who} is {ctx.shape(who)}, {n} elements" if who else f"the tensor has {n} elements"
    fits = [d for d in target if d.isdigit() and int(d) and n % int(d) == 0]
    hint = f" e.g. ({fits[0]}, -1) lets torch work out the other dim" if fits else ""
    return (
        f"{head}: {what}, but shape ({', '.join(target)}) holds a different number. The new shape's dims must "
        f"multiply to {n}; write -1 for one dim to have it inferred ({who or 't'}.view(-1) flattens).{hint}"
    )


def _listed_tensors(ctx: ErrorContext, *names: str) -> tuple[CallSite | None, list[str]]:
    call = ctx.call(*names)
    if call is None:
        return None, []
    return call, ctx.tensors_in(call.arg(0, "tensors"))


@entry("shape.cat-dims", r"Tensors must have same number of dimensions: got (?P<a>\d+) and (?P<b>\d+)")
def cat_dims(ctx: ErrorContext, m: re.Match[str]) -> str:
    call, names = _listed_tensors(ctx, "cat", "concat", "concatenate", "torch.cat")
    shapes = ", ".join(f"{n} is {ctx.shape(n)}" for n in names)
    odd = [n for n in names if len(ctx.record(n).shape) != len(ctx.record(names[0]).shape)] if names else []
    fix = (
        f"{odd[0]}.unsqueeze(0) (or reshape) so every tensor has {m['a']} dims"
        if odd
        else "unsqueeze or reshape so they match"
    )
    return (
        f"{call.text if call else 'cat'} on {ctx.where}: {shapes or 'the tensors differ'}; "
        f"cat joins tensors with the same number of dims. Fix: {fix}."
    )


@entry(
    "shape.cat-sizes",
    r"Sizes of tensors must match except in dimension (?P<d>\d+)\. "
    r"Expected size (?P<want>\d+) but got size (?P<got>\d+) "
    r"for tensor number (?P<i>\d+) in the list",
)
def cat_sizes(ctx: ErrorContext, m: re.Match[str]) -> str:
    call, names = _listed_tensors(ctx, "cat", "concat", "concatenate", "torch.cat")
    i = int(m["i"])
    shapes = ", ".join(f"{n} is {ctx.shape(n)}" for n in names)
    who = names[i] if i < len(names) else f"tensor number {i}"
    return (
        f"{call.text if call else 'cat'} on {ctx.where}: {shapes}; joining along dim {m['d']} needs every other dim "
        f"equal, and {who} has {m['got']} where {m['want']} is expected. Fix: did you mean another dim (dim=1?), or "
        f"reshape {who}."
    )


@entry(
    "shape.stack",
    (
        r"stack expects each tensor to be equal size, but got \[(?P<a>[^\]]*)\] "
        r"at entry (?P<i>\d+) and \[(?P<b>[^\]]*)\] at entry (?P<j>\d+)"
    ),
)
def stack(ctx: ErrorContext, m: re.Match[str]) -> str:
    call, names = _listed_tensors(ctx, "stack", "torch.stack")
    i, j = int(m["i"]), int(m["j"])
    a = names[i] if i < len(names) else f"entry {i}"
    b = names[j] if j < len(names) else f"entry {j}"
    return (
        f"{call.text if call else 'stack'} on {ctx.where}: {a} is [{m['a']}] and {b} is [{m['b']}]; stack puts tensors "
        f"side by side along a new dim, so all must have the same shape. Fix: make them equal, or torch.cat to join "
        f"along an existing dim."
    )


@entry(
    "index.out-of-bounds",
    r"index (?P<i>-?\d+) is out of bounds for dimension (?P<d>\d+) with size (?P<n>\d+)",
    "IndexError",
)
def out_of_bounds(ctx: ErrorContext, m: re.Match[str]) -> str:
    call = ctx.call("getitem", "setitem", "index_select", "gather", "select")
    who = ctx.tensor(call.receiver) if call else None
    n = int(m["n"])
    what = f"{who} is {ctx.shape(who)}" if who else "the tensor"
    return (
        f"{call.text if call else 'Indexing'} on {ctx.where}: {what}, so dim {m['d']} has {n} entries, valid indices "
        f"0..{n - 1} (or -{n}..-1); {m['i']} is outside. Fix: index within range (the last one is [{n - 1}] or [-1])."
    )


@entry("index.dtype", r"tensors used as indices must be long, int, byte or bool tensors", "IndexError")
def index_dtype(ctx: ErrorContext, m: re.Match[str]) -> str:
    call = ctx.call("getitem", "setitem")
    index = ctx.tensors_in(call.args[0]) if call else []
    bad = [n for n in index if ctx.record(n).dtype.startswith(("float", "complex", "bfloat"))] or index
    who = listed(bad) or "the index"
    return (
        f"{call.text if call else 'Indexing'} on {ctx.where}: {who} is "
        f"{ctx.record(bad[0]).dtype if bad else 'not an integer tensor'}; "
        f"tensors used as indices must hold integers (or booleans for a mask). Fix: {bad[0] if bad else 'i'}.long()."
    )


@entry("index.embedding", r"index out of range in self", "IndexError")
def embedding(ctx: ErrorContext, m: re.Match[str]) -> str:
    module = _module_call(ctx)
    if module is None:
        return (
            f"An index on {ctx.where} is larger than the table it looks up "
            "(embedding or index_select). Fix: keep indices below the table size."
        )
    call, weight = module
    rows = ctx.record(weight).shape[0]
    idx = ctx.tensor(call.arg(0))
    values = f" {idx} holds {ctx.record(idx).preview}" if idx else ""
    return (
        f"{call.text} on {ctx.where}: {call.callee} has {rows} rows ({weight} is {ctx.shape(weight)}), so indices "
        f"must be 0..{rows - 1};{values}. Fix: create the embedding with num_embeddings larger than the largest index."
    )
