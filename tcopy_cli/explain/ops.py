"""Notes from the operation record: what each call of the step did, and why.

Provenance comes only from ``Step.ops`` (what the interpreter ran, with relations
measured when each operation returned), never from values that happen to be equal.
Each note names the call as written and the reason a learner can't see in the table:
a call that returned its own input, a reshape that had to copy, indexing that copies,
NumPy bridges, ``x.data = ...``, rebinding vs in-place, writes into views of graph
tensors (``CopySlices``), tensors born at version 1.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, replace

from tcopy_cli.explain.facts import Findings, StepFacts, agree, names_text, note, overlaps, storage_text
from tcopy_cli.trace.layout import is_row_major
from tcopy_cli.trace.records import ArrayRecord, Note, OpInput, OpRecord, OpResult, TensorRecord
from tcopy_cli.trace.scriptnames import is_local, script_name
from tcopy_cli.trace.values import code_span, one_line

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
NUMPY_BRIDGES = frozenset({"from_numpy", "as_tensor", "asarray", "numpy"})
STRUCTURAL = frozenset({"bind", "rebind"})


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


def step_input_names(ops: list[OpRecord]) -> set[str]:
    """Every script name the step's operations were given."""
    return {i.name for op in ops for i in op.inputs if i.name is not None}


def defining(ops: list[OpRecord], name: str) -> tuple[OpRecord, OpResult] | None:
    """The last operation (not a plain binding) whose result the statement bound to ``name``."""
    found: tuple[OpRecord, OpResult] | None = None
    bound: tuple[OpRecord, OpResult] | None = None
    for op in ops:
        if op.error is not None:
            continue
        for res in op.results:
            if res.name == name or name in res.names:
                if op.kind in STRUCTURAL:
                    bound = (op, res)
                else:
                    found = (op, res)
    return found or bound


def op_notes(f: StepFacts) -> list[Note]:
    """Notes for the step's operations (names they explain are left to no other relation rule)."""
    return list(_analysis(f)[0])


def explained_names(f: StepFacts) -> set[str]:
    """Tensor and array names of the step that an operation-record note explains."""
    return _analysis(f)[1]


def _analysis(f: StepFacts) -> tuple[list[Note], set[str]]:
    """(notes, explained names), worked out once per step from the facts alone."""
    got = f.cache.get("ops")
    if got is None:
        explained: set[str] = set()
        known = f.tensors.keys() | f.step.arrays.keys()
        notes = [replace(n, tensors=tuple(t for t in n.tensors if t in known)) for n in _analyse(f, explained)]
        got = f.cache["ops"] = (notes, explained)
    return got  # type: ignore[no-any-return]


def _analyse(f: StepFacts, explained: set[str]) -> list[Note]:
    ops = f.step.ops
    if not ops:
        return []
    notes = Findings()
    first: dict[tuple[int, int], str] = {}  # (operation, object) -> the first name of it the step bound
    for name in f.new_names:
        found = defining(ops, name)
        if found is None or (is_local(name) and found[0].kind in STRUCTURAL):
            continue
        op, res = found
        b = f.tensors[name]
        earlier = first.setdefault((op.index, b.object_id), name)
        if earlier != name:  # one object the call gave twice (deepcopy's memo: one copy per object)
            explained.add(name)
            notes.add([_same_result(op, name, earlier)])
            continue
        if op.function == "deepcopy" and res.item.startswith("."):  # a module's parameters: one note
            src = _preferred(sources(ops, op, res))
            if src is not None and src.relation == "copy":  # a parameter of the new module, a copy of one given
                explained.add(name)
                notes.group(("module", op.index), name)
                continue
        made = _result_notes(f, ops, op, res, name) + _shared_results(f, op, name, first)
        born = _born_reason(op, res, b)
        if made or born:
            explained.add(name)
        notes.add(made)
        if born is not None:  # the names one call as written made at one version, for one reason: one note
            notes.group((_written_as(ops, op), b.version, born), name)
    _whole_modules_born(f, notes, explained)
    by_index = {op.index: op for op in ops}
    out = notes.notes(
        lambda key, names: (
            _module_note(f, by_index[key[1]], names)
            if key[0] == "module"
            else _born_note(by_index[key[0]], key[1], key[2], names)
        )
    )
    for name, a in f.step.arrays.items():
        old = f.state.previous_arrays.get(name)
        if old is not None and old.data_ptr == a.data_ptr:
            continue
        found = defining(ops, name)
        if found is not None:
            made = _array_notes(ops, found[0], found[1], name, a)
            if made:
                explained.add(name)
                out += made
    for op in ops:
        if op.error is None:
            out += _effect_notes(f, op, explained)
    return out


def _written_as(ops: list[OpRecord], op: OpRecord) -> int:
    """The first operation of the step made by the same call as written (``copy.deepcopy(xs)`` runs
    one ``__deepcopy__`` per tensor)."""
    return next(o.index for o in ops if (o.call, o.line, o.function) == (op.call, op.line, op.function))


def _same_result(op: OpRecord, name: str, earlier: str) -> Note:
    """A call that returned one tensor object twice (``deepcopy`` of a list holding one tensor twice)."""
    why = (
        " deepcopy copies each object once (it remembers what it copied), so a container that held one tensor "
        "twice gets one copy, held twice."
        if op.function == "deepcopy"
        else ""
    )
    return note(
        "relation.same-object",
        f"{name} is the same tensor object as {earlier}: {_call(op)} gave one tensor for both.{why} A change "
        f"through one name shows through the other.",
        [name, earlier],
        op=op.index,
    )


def _shared_results(f: StepFacts, op: OpRecord, name: str, first: dict[tuple[int, int], str]) -> list[Note]:
    """A result on the memory of another result of the same call as written, with a version counter
    of its own (``copy.deepcopy([a, a[1:]])``: the storage is copied once, each tensor set onto it anew)."""
    b = f.tensors[name]
    by_index = {o.index: o for o in f.step.ops}
    for (index, _), other in first.items():
        made = by_index.get(index)
        if made is None or (made.call, made.line) != (op.call, op.line) or other == name or other not in f.tensors:
            continue
        r = f.tensors[other]
        if r.storage != b.storage or not b.version_counter or r.version_counter == b.version_counter:
            continue
        how = (
            " (deepcopy copies a storage once, and each tensor that used it is set onto the copy)"
            if op.function == "deepcopy"
            else ""
        )
        return [
            note(
                "relation.untracked-alias",
                f"{name} shares {other}'s memory ({r.storage}){how}, but each has its own version counter: "
                f"an in-place write through one changes the other's values without moving its version, so "
                f"autograd would not notice it.{_disjoint(r, b)}",
                [name, other],
                op=op.index,
            )
        ]
    return []


def _module_note(f: StepFacts, op: OpRecord, names: list[str]) -> Note:
    """The parameters of a module that ``copy.deepcopy(model)`` made."""
    pairs: list[tuple[str, str]] = []
    for n in names:
        found = defining(f.step.ops, n)
        src = _preferred(sources(f.step.ops, found[0], found[1])) if found is not None else None
        pairs.append((n, src.name if src is not None else "?"))
    made, given = [n for n, _ in pairs], [s for _, s in pairs]
    dropped = [
        s for n, s in pairs if (a := f.tensors.get(s)) is not None and a.grad is not None and f.tensors[n].grad is None
    ]
    grads = (
        f" {names_text([s + '.grad' for s in dropped])} {agree(dropped, 'was', 'were')} not copied: the copies "
        f"start with no .grad."
        if dropped
        else ""
    )
    return note(
        "relation.module-copy",
        f"{_call(op)} made a new module whose parameters {names_text(made)} hold the values of "
        f"{names_text(given)} in new memory: independent copies, leaves of their own with no autograd link to "
        f"the originals, so training one module leaves the other unchanged.{grads}",
        [*made, *given],
        op=op.index,
    )


_STRENGTH = {"same-object": 0, "view": 1, "alias": 2, "shares-memory": 3, "copy": 4, "new": 5}


def _preferred(srcs: list[Source]) -> Source | None:
    """The source a note is about: the first direct one with the closest measured relation."""
    if not srcs:
        return None
    direct = [s for s in srcs if s.direct] or srcs
    return min(direct, key=lambda s: _STRENGTH.get(s.relation, 9))


def _tensor(f: StepFacts, name: str) -> TensorRecord | None:
    """A source's record as it was when the operation ran (before the step if the step rebound it)."""
    if name in f.new_names and name in f.before:
        return f.before[name]
    return f.tensors.get(name)


def _result_notes(f: StepFacts, ops: list[OpRecord], op: OpRecord, res: OpResult, name: str) -> list[Note]:
    b = f.tensors[name]
    srcs = sources(ops, op, res)
    src = _preferred(srcs)
    if src is None:
        return []
    if src.name == name and src.relation == "same-object":
        return []
    a = _tensor(f, src.name)
    if src.name == name or _rebound_later(ops, op, src.name):
        # x = x.t(), or a, b = b, a: the source is the tensor the name held before this statement
        src = replace(src, name=f"the old {src.name}")
    made = _relation_note(f, op, name, b, src, a, srcs)
    return [made] if made is not None else []


def _rebound_later(ops: list[OpRecord], op: OpRecord, name: str) -> bool:
    """Whether an assignment after ``op`` in the same statement bound ``name`` to another object
    (``a, b = b, a``: ``a = b`` read the b of before ``b = a``)."""
    bare = script_name(name)
    return any(o.kind in ("bind", "rebind") and o.function == bare and o.index > op.index for o in ops)


def _call(op: OpRecord) -> str:
    """The call as the script wrote it, quoted; one written over several lines in one (``nn.ModuleDict(…)``)."""
    return code_span(one_line(op.call) or op.call)


def _relation_note(
    f: StepFacts, op: OpRecord, name: str, b: TensorRecord, src: Source, a: TensorRecord | None, srcs: list[Source]
) -> Note | None:
    s = src.name
    call = _call(op)
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
                f"{name} is the same tensor object as {s}: {_call(op)} gives the item itself, nothing is copied; "
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
            f"notice, so gradients that use {s}'s saved values can be silently wrong.{_disjoint(a, b)}"
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
    call, fn = _call(op), op.function
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


def _disjoint(a: TensorRecord | None, b: TensorRecord) -> str:
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
    s, call = src.name, _call(op)
    mem = f"same memory ({storage_text(b)})"
    reason = _view_reason(op, src)
    tail = _disjoint(a, b)
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
            f"{_call(op)} had to copy: {s} is not contiguous{layout_cause(a, _made(f, s))}, so no view could "
            f"express the new shape. "
        )
    if fn == "contiguous" and src.direct and not src.input.contiguous:
        return f"{_call(op)} copied because {s} was not contiguous{layout_cause(a, _made(f, s))}. "
    if fn in CONVERTERS | {"as_tensor"} and a is not None and src.direct:
        if a.dtype != b.dtype:
            return f"{_call(op)} had to copy: the dtype changes ({a.dtype} → {b.dtype}). "
        if a.device != b.device:
            return f"{_call(op)} had to copy: the device changes ({a.device} → {b.device}). "
    if src.input.kind == "ndarray" and src.direct and fn in AS_TENSOR:
        if src.input.dtype and src.input.dtype != b.dtype:
            return (
                f"{_call(op)} had to copy: the array is {src.input.dtype} and the tensor {b.dtype} (as_tensor "
                f"shares an array's memory only when the dtype and device stay the same), so later writes to "
                f"{s} don't show in the tensor. "
            )
        if b.device != "cpu":
            return f"{_call(op)} had to copy: the tensor is on {b.device}, the array in the CPU's memory. "
        return f"{_call(op)} copied the array's data, so later writes to {s} don't show in the tensor. "
    if src.input.kind == "ndarray" and src.direct:
        return (
            f"{_call(op)} copies the array's data (unlike torch.from_numpy or torch.as_tensor, which share it), "
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
            f"{_call(op)} indexes with a boolean mask, which always copies: how many elements it selects depends "
            f"on the data, so no view could describe them. "
        )
    if index == "advanced":
        return (
            f"{_call(op)} uses advanced indexing (a list or tensor of positions), which always copies the "
            f"selected elements into new memory. "
        )
    return ""


def _copy_text(
    f: StepFacts, op: OpRecord, name: str, b: TensorRecord, src: Source, a: TensorRecord | None
) -> tuple[str, str]:
    s = src.name
    reason = _copy_reason(f, op, src, b, a) or f"{_call(op)}: "
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
        f" {_call(op)} copied {s}.grad too: {name}.grad holds {b.grad.preview} in its own memory "
        f"({b.grad.storage}), and a backward that reaches {name} adds to it."
    )


def _kept_layout(op: OpRecord, name: str, b: TensorRecord, s: str, a: TensorRecord | None) -> str:
    """A copy that kept its source's layout (``clone`` preserves strides): not contiguous either."""
    if a is None or not a.stride or b.stride != a.stride or is_row_major(b.shape, b.stride):
        return ""
    return (
        f" {_call(op)} kept {s}'s layout (strides {tuple(b.stride)}), so {name} is not contiguous either; "
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
    a = _tensor(f, src.name)
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
            f"{reason or _call(op) + ': '}{name} is a new tensor in the graph ({b.grad_fn}), computed from "
            f"{_few(linked)}{reach}.{tail}",
            [name, *(n for n in linked + plain if n in f.tensors and n != name)],
            op=op.index,
        )
    if b.version < 0:
        return inference_note(name)
    if not f.step.grad_enabled and not b.requires_grad and any(s.input.requires_grad for s in srcs):
        return note(
            "relation.no-grad",
            f"{_call(op)}: {name} was computed with gradient tracking off (no_grad/inference mode): it has no "
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
            f"{_call(op)}: {name} is new memory ({storage_text(b)}), not a view: {op.function} always copies, "
            f"so {name} shares no memory with {_few(joined)} and later changes to "
            f"{'it' if len(joined) == 1 else 'them'} don't show in {name}.",
            [name, *joined],
            op=op.index,
        )
    return None


def _whole_modules_born(f: StepFacts, notes: Findings, explained: set[str]) -> None:
    """A module's parameters that start at version 1 for its layers' initialisation: the call's
    operation lists at most ``MAX_RESULT_ITEMS`` of them (the first 16 of a ResNet's 65), so the
    other parameters of that module the step made, at that version, join the note."""
    for key, names in list(notes.groups().items()):
        if not isinstance(key, tuple) or key[0] == "module" or key[2] != "layers":
            continue
        tops = {n.partition(".")[0] for n in names if "." in n}
        for n in f.new_names:
            b = f.tensors.get(n)
            if (
                n not in explained
                and n.partition(".")[0] in tops
                and b is not None
                and b.requires_grad
                and b.is_leaf
                and b.version == key[1]
            ):
                explained.add(n)
                notes.group(key, n)


def _born_reason(op: OpRecord, res: OpResult, b: TensorRecord) -> str | None:
    """Why a call's new result starts at a version above 0 (``deepcopy``, ``layers``, ``layer``,
    ``filled``), or None when it starts at 0 or is not new."""
    if op.kind != "call" or b.version < 1 or any(r.relation in ("same-object", "view", "alias") for r in res.relations):
        return None
    if any(op.bumped):
        return None
    if op.function == "deepcopy":
        return "deepcopy"
    if res.item.startswith(".") and "." in res.item[1:]:
        return "layers"
    if res.item.startswith("."):
        return "layer"
    return "filled"


def _born_note(op: OpRecord, version: int, reason: str, names: list[str]) -> Note:
    """The names ``op`` made that start at ``version`` for one ``reason``: one note."""
    one = len(names) == 1
    it = agree(names, "it", "them")
    if reason == "deepcopy":  # Tensor.__deepcopy__: new_empty([]) then set_() onto the copied storage
        why = (
            f"deepcopy makes {agree(names, 'an empty tensor', 'empty tensors')} and then points {it} at a copy of "
            f"the original memory with set_(), an in-place change that moves the version counter (no values "
            f"are written then)"
        )
        counted = ""
    else:
        why = {
            "layers": "each layer initialises its parameters in place (its reset_parameters)",
            "layer": f"the layer initialises its parameters in place (for example {op.function}'s reset_parameters)",
            "filled": f"the call wrote into {it} in place after creating {it}",
        }[reason]
        counted = (
            "; the version counter counts that write too" if one else "; their version counters count those writes too"
        )
    subject = f"{names[0]} starts" if one else f"{names_text(names)} start"
    text = (
        f"{subject} at version {version}, not 0: {_call(op)} created {it} and {why}{counted}. Nothing is "
        f"wrong with {it}."
    )
    return note("relation.born-version", text, names, op=op.index)


def _array_notes(ops: list[OpRecord], op: OpRecord, res: OpResult, name: str, arr: ArrayRecord) -> list[Note]:
    srcs = sources(ops, op, res)
    if not srcs:
        return []
    src = srcs[0]
    if src.relation == "shares-memory":
        where = f" (storage {arr.storage})" if arr.storage else ""
        return [
            note(
                "relation.numpy-array",
                f"{_call(op)} made the NumPy array {name} on the memory of {src.name}{where}, without copying: "
                f"writes to {name} change {src.name}, and autograd never sees them.",
                [name, src.name],
                op=op.index,
            )
        ]
    if src.relation in ("copy", "new") and op.function in NUMPY_BRIDGES | {"array"}:
        return [
            note(
                "relation.numpy-copy",
                f"{_call(op)} copied {src.name}'s values into the NumPy array {name}: they share no memory.",
                [name, src.name],
                op=op.index,
            )
        ]
    return []


def _effect_notes(f: StepFacts, op: OpRecord, explained: set[str]) -> Iterator[Note]:
    """What an operation did to tensors that already existed: attribute writes, rebinding, in-place views."""
    if op.kind == "setattr":
        yield from _setattr_notes(f, op, explained)
    if op.function in ("requires_grad", "requires_grad_") and "requires_grad" in op.detail.get("before", {}):
        yield from _flag_notes(f, op, explained)
    elif op.kind == "rebind":
        yield from _rebind_notes(f, op)
    if op.kind == "augassign" and op.bumped:
        target = op.inputs[op.bumped[0]]
        res = op.results[0] if op.results else None
        others = [n for n in (res.names if res else []) if n != target.name]
        if target.name and others:
            yield note(
                "change.in-place-augassign",
                f"{_call(op)} changed the tensor {target.name} names in place (the same object, its version moved), "
                f"so {names_text(others)} {'sees' if len(others) == 1 else 'see'} the change too: on a tensor, "
                f"`{target.name} {op.call.split(' ', 2)[1]} ...` is in-place, while `{target.name} = {target.name} "
                f"{op.call.split(' ', 2)[1][:-1]} ...` would make a new tensor and leave "
                f"{names_text(others)} unchanged.",
                [target.name, *others],
                op=op.index,
            )
    yield from _copy_slices(f, op)


def written_tensor(f: StepFacts, op: OpRecord) -> str | None:
    """The step's name for the tensor whose attribute or flag ``op`` wrote (``x`` of ``x.grad = g``)."""
    target = op.inputs[0] if op.inputs and op.inputs[0].role == "self" else None
    if target is None or target.name is None or target.name not in f.tensors:
        return None
    return target.name


def leaf_sharing_tail(f: StepFacts, name: str) -> tuple[str, list[str]]:
    """For a tensor that now requires grad: the names on its memory that require grad too, and a sentence."""
    sharing = [n for n in f.tensors[name].shares_memory_with if n in f.tensors and f.tensors[n].requires_grad]
    if not sharing:
        return "", []
    return (
        f" It shares memory with {names_text(sharing)}, but gradients into {name} won't reach {names_text(sharing)}.",
        sharing,
    )


def _setattr_notes(f: StepFacts, op: OpRecord, explained: set[str]) -> Iterator[Note]:
    t = written_tensor(f, op)
    if t is None:
        return
    replaced = op.detail.get("replaced", [])
    before, after = op.detail.get("before", {}), op.detail.get("after", {})
    r = f.tensors[t]
    if "storage" in replaced:
        explained.add(t)
        changed = before.get("shape") != after.get("shape")
        shape = f"; shape {after.get('shape')}, was {before.get('shape')}" if changed else ""
        old = f.before.get(t)
        kept = [n for n, rec in f.tensors.items() if old is not None and n != t and rec.storage == old.storage]
        tail = (
            f" {names_text(kept)} still {'uses' if len(kept) == 1 else 'use'} the old memory ({old.storage})."
            if (kept and old is not None)
            else ""
        )
        counter = [n for n in kept if r.version_counter and f.tensors[n].version_counter == r.version_counter]
        if counter:  # measured: w keeps its counter, and a w.detach() made before still shares it
            tail += (
                f" {names_text(counter)} still {agree(counter, 'shares', 'share')} {t}'s version counter: an "
                f"in-place write to {t} moves {agree(counter, 'its', 'their')} version too, though it no longer "
                f"changes {agree(counter, 'its', 'their')} values."
            )
        yield note(
            "change.data-swap",
            f"{_call(op)} swapped the memory under {t}: {t} is still the same tensor object (same names, "
            f"requires_grad={r.requires_grad}, same place in the graph) but now uses other memory "
            f"({storage_text(r)}{shape}). Its version counter did not move (version {r.version}), so autograd "
            f"can't tell.{_swap_readers(f, t)}{_swap_dtype(before, after, r, t)}{tail}",
            [t, *kept],
            op=op.index,
        )
    if "grad" in replaced:
        old_grad = f.before[t].grad if t in f.before else None
        holders = [n for n, rec in f.tensors.items() if old_grad is not None and rec.object_id == old_grad.object_id]
        still = (
            f" {names_text(holders)} still {agree(holders, 'holds', 'hold')} the old gradient ({old_grad.preview}): "
            f"{agree(holders, 'it is', 'they are')} the tensor {t}.grad was, and this only dropped {t}'s reference "
            f"to it."
            if holders and old_grad is not None
            else ""
        )
        if not after.get("has_grad"):
            text = (
                f"{_call(op)} removed {t}'s gradient: the next backward stores a fresh {t}.grad instead of "
                f"adding to the old one (what optimizer.zero_grad() does by default).{still}"
            )
        else:
            text = f"{_call(op)} set {t}.grad directly: the next backward adds its gradient to this tensor.{still}"
            if not r.requires_grad:
                text = (
                    f"{_call(op)} set {t}.grad directly; {t} does not require grad, so no backward will add to it "
                    f"(the value stays what was assigned)."
                )
        yield note("change.grad-replaced", text, [t], op=op.index)


def _swap_readers(f: StepFacts, t: str) -> str:
    """What the graph nodes that saved ``t`` read after its memory was swapped, where measured:
    a node that saved ``t`` itself (a leaf, an input) reads the new memory; one that saved a
    copy of the handle (its own output) keeps the old. Only a measured change is told."""
    nodes = list(dict.fromkeys(ev.node for ev in f.step.saved_events if ev.kind == "silent" and ev.tensor == t))
    if not nodes:
        return ""
    return (
        f" {names_text(nodes)} saved {t} for backward and now {'reads' if len(nodes) == 1 else 'read'} the new "
        f"memory: the next backward through {agree(nodes, 'it', 'them')} computes from the new values."
    )


def _swap_dtype(before: dict[str, object], after: dict[str, object], r: TensorRecord, t: str) -> str:
    """A swap that changed the dtype: the gradient keeps its own."""
    if before.get("dtype") == after.get("dtype"):
        return ""
    grad = (
        f" {t}.grad is still {r.grad.dtype}: .data = ... replaces the values, not the gradient."
        if r.grad is not None and r.grad.dtype != r.dtype
        else ""
    )
    return f" {t} is now {after.get('dtype')} (was {before.get('dtype')}).{grad}"


def _flag_notes(f: StepFacts, op: OpRecord, explained: set[str]) -> Iterator[Note]:
    """``x.requires_grad = ...`` or ``x.requires_grad_(...)``: the flag before and after, measured."""
    t = written_tensor(f, op)
    if t is None:
        return
    r = f.tensors[t]
    was, now = bool(op.detail["before"]["requires_grad"]), bool(op.detail["after"]["requires_grad"])
    leaf = bool(op.detail.get("is_leaf"))
    explained.add(t)
    if now and not was:
        tail, sharing = leaf_sharing_tail(f, t)
        text = (
            f"{_call(op)} made {t} a leaf that requires grad: operations on {t} from here on are recorded in "
            f"the graph, and backward fills {t}.grad. Results computed from {t} before this line stay "
            f"unlinked to it.{tail}"
        )
        yield note("change.requires-grad-on", text, [t, *sharing], op=op.index)
    elif was and not now:
        grad = " (the .grad it already has stays)" if op.detail["after"].get("has_grad") else ""
        text = (
            f"{_call(op)}: {t} no longer requires grad: operations on it are no longer recorded, and backward "
            f"will not fill {t}.grad{grad}. It is still a leaf; results computed from it earlier keep their graph."
        )
        yield note("change.requires-grad-off", text, [t], op=op.index)
    elif now and not leaf:
        text = (
            f"{_call(op)} changed nothing: {t} already requires grad, as a non-leaf computed in the graph "
            f"({r.grad_fn}). Backward won't fill {t}.grad; call {t}.retain_grad() before backward to keep it."
        )
        yield note("change.requires-grad-unchanged", text, [t], op=op.index)
    elif now == was:
        text = f"{_call(op)} changed nothing: {t} {'already requires' if now else 'does not require'} grad."
        yield note("change.requires-grad-unchanged", text, [t], op=op.index)


def _rebind_notes(f: StepFacts, op: OpRecord) -> Iterator[Note]:
    held = [n for n in op.detail.get("still_held_by", []) if n != op.function]
    name = op.function
    if not held:
        if "still_held_by" in op.detail:
            yield from _rebind_unheld(f, op, name)
        return
    verb = "holds" if len(held) == 1 else "hold"
    yield note(
        "rebind.still-held",
        f"{_call(op)} bound the name {name} to another object; {names_text(held)} still {verb} the old tensor, "
        f"which this statement did not change (an in-place write such as `{name} += ...` or `{name}.add_(...)` "
        f"would have changed it for {names_text(held)} too).",
        [name, *held],
        op=op.index,
    )


def _rebind_unheld(f: StepFacts, op: OpRecord, name: str) -> Iterator[Note]:
    """``Y = Y + X``: the name now holds another tensor, and no name holds the old one (measured)."""
    new, old = f.tensors.get(name), f.before.get(name)
    if new is None or old is None or new.object_id == old.object_id or new.storage == old.storage:
        return  # (a view of the old tensor is told by its relation note)
    if any(r.storage == new.storage for r in f.before.values()):
        return  # not new memory: ``b = a`` binds b to a tensor already there (its relation note says so)
    if f.step.loops:  # each turn of a loop rebinds its names: routine there, and folded lines show it
        return
    graphs = [n for n, r in f.tensors.items() if old.node_id in r.reach_ids]
    kept = (
        f", though the graph of {names_text(graphs)} still holds it (a backward through "
        f"{agree(graphs, 'it', 'them')} uses the old {name})"
        if graphs
        else ""
    )
    yield note(
        "rebind.new-object",
        f"{_call(op)} bound {name} to a new tensor in new memory ({new.storage}; the old {name} was in "
        f"{old.storage}); no name in the script holds the old {name} any more{kept}. `{name} += ...` or "
        f"`{name}.add_(...)` would have written into the old memory instead.",
        [name, *graphs],
        op=op.index,
    )


def _copy_slices(f: StepFacts, op: OpRecord) -> Iterator[Note]:
    for i in op.bumped:
        inp = op.inputs[i]
        for target, via in ((inp.base, inp), (inp.name, None)):
            if target is None or target not in f.tensors or target not in f.before:
                continue
            now, old = f.tensors[target], f.before[target]
            if now.grad_fn != "CopySlices" or old.grad_fn == "CopySlices":
                continue
            if via is not None:
                text = (
                    f"{_call(op)} wrote in place into {via.name or via.expr}, a view of {target}: autograd rewrote "
                    f"{target}'s history, so {target}.grad_fn is now CopySlices (backward through {target} "
                    f"passes through this write), though {target} itself was not named in the call."
                )
            else:
                text = (
                    f"{_call(op)} wrote in place into part of {target}: {target}.grad_fn is now CopySlices "
                    f"(was {old.grad_fn}), so backward through {target} passes through this write."
                )
            yield note("change.copy-slices", text, [target, *([via.name] if via and via.name else [])], op=op.index)


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
