"""How a new tensor relates to the named input it came from, in words, from the operation record.

A result is the input itself (a call that returned it), a view of it, an alias with a version counter
of its own (``.data``), on a NumPy array's memory, a copy (and why the call had to copy: a layout no
view could express, a new dtype or device, indexing that copies), or new memory computed in the graph.
Each relation is the one measured when the operation returned (``Step.ops``), never guessed from values.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from tcopy_cli.explain.facts import StepFacts, names_text, note, overlaps, quoted_call, storage_text
from tcopy_cli.trace.layout import is_row_major
from tcopy_cli.trace.records import Note, OpInput, OpRecord, OpResult, TensorRecord
from tcopy_cli.trace.values import code_span

# Calls that return their input itself when nothing needs converting.
CONVERTERS = frozenset(
    {
        "to",
        "type",
        "type_as",
        "float",
        "double",
        "half",
        "bfloat16",
        "int",
        "long",
        "short",
        "bool",
        "byte",
        "char",
        "cpu",
        "cuda",
    }
)
MAY_COPY = frozenset({"reshape", "flatten", "reshape_as", "ravel"})
AS_TENSOR = frozenset({"as_tensor", "asarray"})


@dataclass(frozen=True)
class Source:
    """A named input a result relates to (directly, or through temporaries of the step)."""

    name: str
    relation: str
    graph: bool
    input: OpInput
    direct: bool


def sources(ops: list[OpRecord], op: OpRecord, res: OpResult) -> list[Source]:
    """Named inputs of ``res``, direct ones first (as the record lists them)."""
    out: list[Source] = []
    for rel in res.relations:
        inp = op.inputs[rel.input] if rel.op is None else ops[rel.op].inputs[rel.input]
        if inp.name is not None and inp.role != "old":
            out.append(Source(inp.name, rel.relation, rel.graph, inp, rel.op is None))
    out.sort(key=lambda s: not s.direct)
    return out


def source_record(f: StepFacts, name: str) -> TensorRecord | None:
    """A source's record as it was when the operation ran (before the step if the step rebound it)."""
    if name in f.new_names and name in f.before:
        return f.before[name]
    return f.tensors.get(name)


def relation_note(
    f: StepFacts, op: OpRecord, name: str, b: TensorRecord, src: Source, a: TensorRecord | None, srcs: list[Source]
) -> Note | None:
    s = src.name
    call = quoted_call(op)
    kind, text = "", ""
    if src.relation == "same-object":
        if op.kind in ("bind", "rebind"):  # an assignment, not a call that returned its input
            kind = "relation.same-object"
            # "the old b" is no name any more (a, b = b, a): there is no other name to change it through
            shared = "" if s.startswith("the old ") else "; every change through one name shows through the other"
            text = f"{name} is the same tensor object as {s}: assignment only adds a name, nothing is copied{shared}."
        elif op.kind == "index":  # an item of a list, tuple or dict (indexing a tensor gives a view)
            kind = "relation.same-object"
            text = (
                f"{name} is the same tensor object as {s}: {quoted_call(op)} gives the item itself, nothing is copied; "
                f"every change through one name shows through the other."
            )
        else:
            kind, text = "relation.returned-input", _returned_itself(op, name, s, b)
    elif src.relation == "view":
        kind, text = _view_text(op, name, b, src, a)
    elif src.relation == "alias":
        kind = "relation.untracked-alias"
        text = (
            f"{call} gave {name}, which shares {s}'s memory ({storage_text(b)}) but has its own version counter "
            f"and no graph (what .data gives): in-place changes to {name} also change {s} and autograd will NOT "
            f"notice, so gradients that use {s}'s saved values can be silently wrong.{disjoint_text(a, b)}"
        )
    elif src.relation == "shares-memory":
        kind = "relation.numpy-shared"
        text = (
            f"{call} made {name} on the memory of the NumPy array {s} without copying ({storage_text(b)}): "
            f"writes through {s} show in {name} and the other way round, and autograd never sees writes made "
            f"through the array."
        )
    elif src.relation == "copy":
        kind, text = _copy_text(f, op, name, b, src, a)
    else:
        return _new_note(f, op, name, b, srcs)
    return note(kind, text, [name, s], op=op.index)


def _returned_itself(op: OpRecord, name: str, s: str, b: TensorRecord) -> str:
    call, fn = quoted_call(op), op.function
    same = f"{name} and {s} are one tensor, so a change through either name shows in both."
    if fn in CONVERTERS:
        return (
            f"{call} returned {s} itself: {s} is already {b.dtype} on {b.device}, so nothing needed converting "
            f"and no copy was made. {same}"
        )
    if fn == "contiguous":
        return f"{call} returned {s} itself: {s} is already contiguous, so no copy was made. {same}"
    if fn in AS_TENSOR:
        return (
            f"{call} returned {s} itself: it is already a tensor of the requested dtype and device, and "
            f"as_tensor copies only when it must. {same}"
        )
    if fn.endswith("_"):
        return f"{call} works in place and returns its receiver: {same}"
    return f"{call} returned {s} itself (the same tensor object), not a copy. {same}"


def disjoint_text(a: TensorRecord | None, b: TensorRecord) -> str:
    if a is None or a.storage != b.storage or overlaps(a, b):
        return ""
    return " They cover different bytes of that storage, so a write to one does not change the other."


def _view_reason(op: OpRecord, src: Source) -> str:
    if op.kind == "index":
        return " (basic indexing with integers and slices always gives a view)"
    if op.kind == "iterate":
        return " (iterating over a tensor gives a view of each row)"
    if op.function in MAY_COPY and src.direct:
        return f" ({src.name} is contiguous, so a view could express the new shape and nothing was copied)"
    return ""


def _view_text(op: OpRecord, name: str, b: TensorRecord, src: Source, a: TensorRecord | None) -> tuple[str, str]:
    s, call = src.name, quoted_call(op)
    mem = f"same memory ({storage_text(b)})"
    reason = _view_reason(op, src)
    tail = disjoint_text(a, b)
    src_grad = a.requires_grad if a is not None else src.input.requires_grad
    if src.graph:
        return "relation.view", (
            f"{call}: {name} is a view of {s}{reason}: {mem}, same version counter, and it stays in the graph "
            f"({b.grad_fn}). In-place changes to {name} also change {s}; autograd will notice. Gradients through "
            f"{name} flow back into {s}.{tail}"
        )
    if b.requires_grad and b.is_leaf and src_grad:
        return "relation.leaf-on-shared-memory", (
            f"{call}: {name} is a new leaf that requires grad on {s}'s memory ({storage_text(b)}) and version "
            f"counter: in-place changes show in both, but gradients into {name} stay in {name}.grad and never "
            f"reach {s}.{tail}"
        )
    if src_grad and not b.requires_grad:
        return "relation.detached", (
            f"{call}: {name} shares {s}'s memory ({storage_text(b)}) and its version counter but is cut from the "
            f"graph (no grad_fn, requires_grad=False): in-place changes to {name} also change {s} and autograd "
            f"will notice them, but no gradient flows from {name} back to {s}.{tail}"
        )
    return "relation.view", (
        f"{call}: {name} is a view of {s}{reason}: {mem} and version counter; in-place changes to either show "
        f"in both.{tail}"
    )


def _copy_reason(f: StepFacts, op: OpRecord, src: Source, b: TensorRecord, a: TensorRecord | None) -> str:
    fn, s = op.function, src.name
    if op.kind == "index":
        return _index_reason(op)
    if fn in MAY_COPY and src.direct and not src.input.contiguous:
        return (
            f"{quoted_call(op)} had to copy: {s} is not contiguous{layout_cause(a, _made(f, s))}, so no view could "
            f"express the new shape. "
        )
    if fn == "contiguous" and src.direct and not src.input.contiguous:
        return f"{quoted_call(op)} copied because {s} was not contiguous{layout_cause(a, _made(f, s))}. "
    if fn in CONVERTERS | {"as_tensor"} and a is not None and src.direct:
        if a.dtype != b.dtype:
            return f"{quoted_call(op)} had to copy: the dtype changes ({a.dtype} → {b.dtype}). "
        if a.device != b.device:
            return f"{quoted_call(op)} had to copy: the device changes ({a.device} → {b.device}). "
    if src.input.kind == "ndarray" and src.direct and fn in AS_TENSOR:
        if src.input.dtype and src.input.dtype != b.dtype:
            return (
                f"{quoted_call(op)} had to copy: the array is {src.input.dtype} and the tensor {b.dtype} (as_tensor "
                f"shares an array's memory only when the dtype and device stay the same), so later writes to "
                f"{s} don't show in the tensor. "
            )
        if b.device != "cpu":
            return f"{quoted_call(op)} had to copy: the tensor is on {b.device}, the array in the CPU's memory. "
        return f"{quoted_call(op)} copied the array's data, so later writes to {s} don't show in the tensor. "
    if src.input.kind == "ndarray" and src.direct:
        return (
            f"{quoted_call(op)} copies the array's data (unlike torch.from_numpy or torch.as_tensor, which share it), "
            f"so later writes to {s} don't show in the tensor. "
        )
    return ""


def _made(f: StepFacts, name: str) -> str:
    """`` (s got it at line 3: `a.expand(2, 3)`)`` where the explain state knows the step that bound it."""
    origin = f.state.bound_at.get(name)
    if origin is None or name in f.new_names:
        return ""
    return f"; {name} got this tensor at line {origin.line}: {code_span(origin.source)}"


def layout_cause(a: TensorRecord | None, made: str = "") -> str:
    """Why a tensor that is not contiguous is not, from its measured sizes and strides: a stride 0
    (``expand``), dimensions out of order (a transpose or permute), or gaps (a slice that skips
    elements); empty where the strides are not known. ``made``: where the tensor was made."""
    if a is None or len(a.stride) != len(a.shape):
        return ""
    dims = [(i, size, stride) for i, (size, stride) in enumerate(zip(a.shape, a.stride)) if size > 1]
    strides = tuple(a.stride)
    zero = [str(i) for i, _, stride in dims if stride == 0]
    if zero:
        why = (
            f"stride 0 in dim {', '.join(zero)}, strides {strides}: it repeats values without copying them, as "
            f"expand or broadcasting makes, so the repeated values exist once in memory"
        )
    elif any(x[2] < y[2] for x, y in itertools.pairwise(dims)):
        why = f"strides {strides}: its dimensions lie in memory in another order, as after a transpose or permute"
    else:
        why = (
            f"strides {strides} for shape {tuple(a.shape)}: its rows have gaps in memory, as a slice that skips "
            f"elements leaves"
        )
    return f" ({why}{made})"


def _index_reason(op: OpRecord) -> str:
    index = op.detail.get("index")
    if index == "boolean":
        return (
            f"{quoted_call(op)} indexes with a boolean mask, which always copies: how many elements it selects depends "
            f"on the data, so no view could describe them. "
        )
    if index == "advanced":
        return (
            f"{quoted_call(op)} uses advanced indexing (a list or tensor of positions), which always copies the "
            f"selected elements into new memory. "
        )
    return ""


def _copy_text(
    f: StepFacts, op: OpRecord, name: str, b: TensorRecord, src: Source, a: TensorRecord | None
) -> tuple[str, str]:
    s = src.name
    reason = _copy_reason(f, op, src, b, a) or f"{quoted_call(op)}: "
    if src.input.kind == "ndarray":
        return "relation.numpy-copy", (
            f"{reason}{name} holds {s}'s values in its own memory ({storage_text(b)}): an independent copy."
        )
    if src.graph:
        return "relation.copy-in-graph", (
            f"{reason}{name} is a copy of {s} in new memory ({storage_text(b)}) that stays in the graph "
            f"({b.grad_fn}): in-place changes to {name} don't affect {s}, and gradients through {name} flow "
            f"back into {s}.{_kept_layout(op, name, b, s, a)}"
        )
    return "relation.independent-copy", (
        f"{reason}{name} holds {s}'s values in new memory ({storage_text(b)}) with no autograd link to it: an "
        f"independent copy. Changes to either don't affect the other, and no gradient flows from {name} to {s}."
        f"{_copied_grad(op, name, b, s, a)}{_kept_layout(op, name, b, s, a)}"
    )


def _copied_grad(op: OpRecord, name: str, b: TensorRecord, s: str, a: TensorRecord | None) -> str:
    """A copy that got a .grad of its own from the call (``copy.deepcopy`` copies a leaf's grad too)."""
    if a is None or a.grad is None or b.grad is None or b.grad.storage == a.grad.storage:
        return ""
    return (
        f" {quoted_call(op)} copied {s}.grad too: {name}.grad holds {b.grad.preview} in its own memory "
        f"({b.grad.storage}), and a backward that reaches {name} adds to it."
    )


def _kept_layout(op: OpRecord, name: str, b: TensorRecord, s: str, a: TensorRecord | None) -> str:
    """A copy that kept its source's layout (``clone`` preserves strides): not contiguous either."""
    if a is None or not a.stride or b.stride != a.stride or is_row_major(b.shape, b.stride):
        return ""
    return (
        f" {quoted_call(op)} kept {s}'s layout (strides {tuple(b.stride)}), so {name} is not contiguous either; "
        f"{s}.contiguous() would copy into row order."
    )


JOINERS = frozenset({"cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack", "column_stack"})
"""Calls that always put their inputs' values into new memory (never a view)."""


def _few(names: list[str], most: int = 4) -> str:
    """``a, b and c``, or the first ``most`` and how many more."""
    if len(names) <= most:
        return names_text(names)
    return f"{', '.join(names[:most])} and {len(names) - most} more"


def _is_param(inp: OpInput) -> bool:
    """A called module's parameter, recorded as an input of the call (role ``fc1.weight``)."""
    return not inp.role.startswith(("self", "arg", "value", "old")) and not inp.role.endswith("=")


def _new_note(f: StepFacts, op: OpRecord, name: str, b: TensorRecord, srcs: list[Source]) -> Note | None:
    linked = list(dict.fromkeys(s.name for s in srcs if s.graph))
    src = srcs[0]
    a = source_record(f, src.name)
    reason = _copy_reason(f, op, src, b, a)
    # The name the statement rebound (x = f(x)) held another tensor when the call ran.
    linked = [f"the old {n}" if n == name else n for n in linked]
    if linked and b.grad_fn is not None:
        # The leaves its backward reaches (measured graph reach of the new tensor).
        leaves = [n for n in b.reaches if (r := f.tensors.get(n)) is not None and r.is_leaf and r.requires_grad]
        reach = f"; backward through it sends gradients to {_few(leaves)}" if leaves else ""
        # Named arguments the call was given that take no gradient (they need none).
        plain = [
            s.name for s in srcs if s.direct and not s.graph and not _is_param(s.input) and not s.input.requires_grad
        ]
        plain = list(dict.fromkeys(f"the old {n}" if n == name else n for n in plain))
        plain = [n for n in plain if n not in linked]
        tail = (
            f" No gradient flows back to {names_text(plain)}, which {'does' if len(plain) == 1 else 'do'} not "
            f"require grad."
            if plain
            else ""
        )
        return note(
            "relation.computed",
            f"{reason or quoted_call(op) + ': '}{name} is a new tensor in the graph ({b.grad_fn}), computed from "
            f"{_few(linked)}{reach}.{tail}",
            [name, *(n for n in linked + plain if n in f.tensors and n != name)],
            op=op.index,
        )
    if b.version < 0:
        return inference_note(name)
    if not f.step.grad_enabled and not b.requires_grad and any(s.input.requires_grad for s in srcs):
        return note(
            "relation.no-grad",
            f"{quoted_call(op)}: {name} was computed with gradient tracking off (no_grad/inference mode): it has no "
            f"grad_fn and requires_grad=False, whatever its inputs were.",
            [name],
            op=op.index,
        )
    if reason:
        return note(
            "relation.copy-reason",
            f"{reason}{name} is new memory ({storage_text(b)}): writes to {name} don't reach {src.name}.",
            [name, src.name],
            op=op.index,
        )
    joined = list(dict.fromkeys(s.name for s in srcs if s.direct and s.relation == "new"))
    if op.function in JOINERS and joined and len(joined) == len({s.name for s in srcs if s.direct}):
        return note(
            "relation.joined-copy",
            f"{quoted_call(op)}: {name} is new memory ({storage_text(b)}), not a view: {op.function} always copies, "
            f"so {name} shares no memory with {_few(joined)} and later changes to "
            f"{'it' if len(joined) == 1 else 'them'} don't show in {name}.",
            [name, *joined],
            op=op.index,
        )
    return None


def inference_note(name: str) -> Note:
    """A tensor with no version counter: an inference tensor (made under ``torch.inference_mode()``)."""
    return note(
        "relation.inference",
        f"{name} is an inference tensor (made under torch.inference_mode()): no grad_fn, requires_grad=False, "
        f"and no version counter at all (the version shown as -1 means none). Autograd can't save it for "
        f"backward, so an operation that must save it (multiplying it by a tensor that requires grad) fails, "
        f"and outside inference_mode() it can't be changed in place. {name}.clone() made outside "
        f"inference_mode() is a normal tensor.",
        [name],
    )
