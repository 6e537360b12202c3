"""What an in-place write did beyond moving a version counter, from the operation record.

Each note reads the operation that wrote (its inputs' dtypes, the ``out=`` role) and the
records of the tensor it wrote, before and after: the dtype the result was converted to
(``h += x64`` keeps ``h`` float16; ``i.copy_(f)`` drops fractions), a tensor given as
``out=`` (and resized), a tensor whose elements overlap in memory (``as_strided``: one
location written more than once), and a tensor in the graph that got a new ``grad_fn``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator

from tcopy_cli.explain.facts import StepFacts, agree, names_text, note
from tcopy_cli.trace.records import Note, OpInput, OpRecord, TensorRecord
from tcopy_cli.trace.scriptnames import is_local
from tcopy_cli.trace.values import code_span


def write_effects(f: StepFacts) -> list[Note]:
    """Notes about the in-place writes of the step's operations (those that succeeded)."""
    out: list[Note] = []
    for op in f.step.ops:
        if op.error is None and op.bumped:
            out += _effects(f, op)
    return out


def _effects(f: StepFacts, op: OpRecord) -> Iterator[Note]:
    target = op.inputs[op.bumped[0]]
    name = target.name
    if name is None or name not in f.tensors or name not in f.before:
        return
    r, old = f.tensors[name], f.before[name]
    if r.object_id != old.object_id:
        return
    call = code_span(op.call)
    if target.role == "out=":
        yield _out_note(op, call, name, r, old)
    converted = _converted(op, target, r, call, name)
    if converted is not None:
        yield converted
    overlap = _overlap_note(f, op, target, call, name, r)
    if overlap is not None:
        yield overlap
    if old.grad_fn is not None and r.grad_fn not in (None, old.grad_fn, "CopySlices"):
        yield note(
            "change.grad-fn",
            f"{call} changed {name} in place, and {name} is in the graph: autograd records an in-place operation by "
            f"giving the tensor a new grad_fn, so {name}.grad_fn is now {r.grad_fn} (was {old.grad_fn}) and "
            f"backward through {name} first goes back through this operation.",
            [name],
            op=op.index,
        )


def _out_note(op: OpRecord, call: str, name: str, r: TensorRecord, old: TensorRecord) -> Note:
    resized = f", resized from {tuple(old.shape)} to {tuple(r.shape)}" if old.shape != r.shape else ""
    return note(
        "change.out",
        f"{call} wrote its result into {name}, the tensor given as out= (the same tensor object, its version "
        f"moved{resized}), instead of making a new tensor. Calls with out= take no part in autograd: they "
        f"refuse inputs that require grad.",
        [name],
        op=op.index,
    )


_BITS = re.compile(r"(\d+)$")


def category(dtype: str) -> str:
    """``boolean``, ``integer``, ``floating`` or ``complex`` for a dtype name (``float16``, ``int64``)."""
    if dtype == "bool":
        return "boolean"
    if dtype.startswith(("int", "uint")):
        return "integer"
    if dtype.startswith("complex"):
        return "complex"
    return "floating"


def _bits(dtype: str) -> int:
    m = _BITS.search(dtype)
    return int(m[1]) if m else 0


def _converted(op: OpRecord, target: OpInput, r: TensorRecord, call: str, name: str) -> Note | None:
    """A value of another dtype written into ``name``: the conversion the write made (measured dtypes)."""
    given = [i for i in op.inputs if i is not target and i.kind == "tensor" and i.dtype and i.dtype != r.dtype]
    if not given or target.role == "out=":
        return None
    src = given[0]
    into, source = category(r.dtype), category(src.dtype)
    what = f"`{src.expr}`" if src.name is None else src.name
    if source in ("floating", "complex") and into in ("integer", "boolean"):
        how = "each value lost its fractional part (rounded toward zero)" if into == "integer" else "nonzero → True"
        return note(
            "change.converted",
            f"{call} wrote {what}'s {src.dtype} values into {name}, which stays {r.dtype}: {how}. An in-place "
            f"write keeps the dtype of the tensor written into: copy_ and item assignment convert to it even from "
            f"floating point to integer, where in-place arithmetic ({name} += ...) refuses.",
            [name],
            op=op.index,
        )
    if source == into and _bits(src.dtype) > _bits(r.dtype) > 0:
        return note(
            "change.converted",
            f"{name} stays {r.dtype}: an in-place result takes the dtype of the tensor written into, so the "
            f"result, computed with {what}'s {src.dtype} values, was rounded to {r.dtype} without a warning "
            f"(`{name} = {name} + ...` would make a new {src.dtype} tensor instead).",
            [name],
            op=op.index,
        )
    return None


MAX_COUNTED = 100_000
"""Elements whose memory locations are counted one by one to find overlap (larger: a sufficient test)."""


def overlapping(shape: list[int], stride: list[int]) -> tuple[bool, int] | None:
    """(whether some elements share a memory location, how many locations there are) from sizes and
    strides; None where that is not worked out (large tensors with strides that may interleave)."""
    dims = [(size, abs(step)) for size, step in zip(shape, stride) if size > 1]
    numel = math.prod(size for size, _ in dims)
    if any(step == 0 for _, step in dims):
        locations = math.prod(size for size, step in dims if step != 0)
        return True, locations
    if numel <= MAX_COUNTED:
        offsets = {0}
        for size, step in dims:
            offsets = {o + k * step for o in offsets for k in range(size)}
        return len(offsets) < numel, len(offsets)
    reach = 0
    for size, step in sorted(dims, key=lambda d: d[1]):
        if step <= reach:
            return None
        reach += (size - 1) * step
    return False, numel


def _overlap_note(f: StepFacts, op: OpRecord, target: OpInput, call: str, name: str, r: TensorRecord) -> Note | None:
    if len(r.stride) != len(r.shape):
        return None
    found = overlapping(r.shape, r.stride)
    if found is None or not found[0]:
        return None
    base = target.base if target.base in f.tensors else None
    shown = f": {base} is now {f.tensors[base].preview}" if base is not None else ""
    return note(
        "change.overlapping-write",
        f"{call} wrote through {name}, whose elements overlap in memory (shape {tuple(r.shape)}, strides "
        f"{tuple(r.stride)}: {math.prod(r.shape)} elements on {found[1]} memory locations), so some locations were "
        f"written more than once, and torch raised no error{shown}.",
        [name, *([base] if base else [])],
        op=op.index,
    )


def memory_swapped(f: StepFacts) -> list[Note]:
    """Tensors that are the same objects as before the step but lie on other memory, where no ``x.data = ...``
    of the script tells it (a module's ``.double()`` or ``.to()`` swaps each parameter's ``.data``)."""
    told = {t for n in f.notes if n.kind == "change.data-swap" for t in n.tensors}
    written = {op.inputs[i].name for op in f.step.ops for i in op.bumped} | {
        i.name for op in f.step.ops if op.kind == "setattr" for i in op.inputs
    }
    names = [
        name
        for name in f.kept_names
        if not is_local(name)
        and name not in told
        and name not in written
        and f.tensors[name].object_id == f.before[name].object_id
        and f.tensors[name].storage != f.before[name].storage
    ]
    if not names:
        return []
    now, was = [f.tensors[n] for n in names], [f.before[n] for n in names]
    dtypes = {(o.dtype, r.dtype) for o, r in zip(was, now)}
    dtype = ""
    if len(dtypes) == 1:
        (before, after) = dtypes.pop()
        dtype = f", {after} (was {before})" if before != after else ""
    versions = {o.version for o, r in zip(was, now) if o.version == r.version}
    kept = len(versions) == 1 and all(o.version == r.version for o, r in zip(was, now))
    version = (
        f" {agree(names, 'Its version counter', 'Their version counters')} did not move (version {versions.pop()})."
        if kept
        else ""
    )
    old_storages = {o.storage for o in was}
    left = [n for n, r in f.tensors.items() if n not in names and r.storage in old_storages and n in f.before]
    behind = (
        f" {names_text(left)} still {agree(left, 'uses', 'use')} the old memory and no longer "
        f"{agree(left, 'shares', 'share')} it with {agree(names, 'it', 'them')}."
        if left
        else ""
    )
    storages = ", ".join(r.storage for r in now)
    return [
        note(
            "change.data-swap",
            f"{code_span(f.step.source)} swapped the memory under {names_text(names)}: "
            f"{agree(names, 'it is the same tensor object', 'they are the same tensor objects')} (same names, same "
            f"place in any optimizer that holds {agree(names, 'it', 'them')}) on other memory now "
            f"({storages}){dtype}.{version}{behind}",
            names + left,
        )
    ]
