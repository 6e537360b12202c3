"""Type promotion: a new tensor whose dtype is not that of the tensors it was computed from.

Read from the operation record: the dtypes of the tensor operands (``OpInput.dtype``) and of the
result. Python numbers are not in the record, so a note about them says what the dtypes show (an
integer tensor gave a floating result) and the rule that made it, never the number's value.
"""

from __future__ import annotations

from tcopy_cli.explain.facts import StepFacts, names_text, note
from tcopy_cli.explain.ops import defining
from tcopy_cli.explain.writes import category
from tcopy_cli.trace.records import Note, OpInput, OpRecord
from tcopy_cli.trace.values import code_span

ARITHMETIC = frozenset(
    {"add", "sub", "rsub", "mul", "div", "true_divide", "floor_divide", "remainder", "pow", "matmul"}
    | {"maximum", "minimum", "atan2", "fmod", "addcmul", "addcdiv", "lerp", "dot", "mm", "bmm", "mv", "cross"}
)
"""Calls whose result dtype comes from type promotion of their operands."""
_DIVISION = frozenset({"div", "true_divide"})


def promotions(f: StepFacts) -> list[Note]:
    """New names computed with a dtype that promotion chose (not the dtype of every operand)."""
    out: list[Note] = []
    for name in f.new_names:
        found = defining(f.step.ops, name)
        if found is None:
            continue
        op = found[0]
        if not (op.kind == "binop" or (op.kind == "call" and op.function in ARITHMETIC)):
            continue
        made = _promoted(op, name, f.tensors[name].dtype)
        if made is not None:
            out.append(made)
    return out


def _promoted(op: OpRecord, name: str, dtype: str) -> Note | None:
    operands = [i for i in op.inputs if i.kind == "tensor" and i.dtype and not i.role.endswith("=")]
    dtypes = list(dict.fromkeys(i.dtype for i in operands))
    if not dtypes:
        return None
    call = code_span(op.call)
    shown = names_text([f"{i.name or code_span(i.expr)} is {i.dtype}" for i in _first_of_each(operands)])
    if len(dtypes) == 1:
        given = dtypes[0]
        if given == dtype:
            return None
        if op.function in _DIVISION and category(given) in ("integer", "boolean"):
            why = (
                "/ is true division: it gives a floating-point result even for integer tensors (// or "
                "torch.div(..., rounding_mode='floor') keep integers)"
            )
        elif category(dtype) != category(given):
            why = (
                f"a Python number of a higher category than the tensor (a float with an integer tensor) gives the "
                f"default dtype of that category, {dtype}; a number of the same category never changes the "
                f"tensor's dtype"
            )
        else:
            return None
        text = f"{call}: {name} is {dtype}, though {shown}: {why}."
    else:
        text = (
            f"{call}: {shown}, so torch chose one dtype for {name}, {dtype}, by its promotion rules "
            f"(torch.result_type: the higher category wins, bool < integer < floating point < complex; within one, "
            f"a tensor with dimensions wins over a 0-dim one, then the wider dtype)."
        )
    return note("dtype.promoted", text, [name, *(i.name for i in operands if i.name)], op=op.index)


def _first_of_each(operands: list[OpInput]) -> list[OpInput]:
    """One operand per dtype, in order."""
    seen: dict[str, OpInput] = {}
    for i in operands:
        seen.setdefault(i.dtype, i)
    return list(seen.values())
