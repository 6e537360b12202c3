"""Dtype and device mismatches, and tensors used where one number is needed."""

from __future__ import annotations

import re

from tcopy_cli.explain.errors.catalogue import entry
from tcopy_cli.explain.errors.context import CallSite, ErrorContext, listed, out_of_place

_FLOATS = ("float", "bfloat", "complex")


def _operands(ctx: ErrorContext) -> tuple[CallSite | None, list[str]]:
    """The first operation with two or more tensor operands (a module's parameters count for a module call)."""
    for c in ctx.calls:
        names = ctx.tensors_in(*c.operands)
        names += [p for p in ctx.module_parameters(c.callee) if p.endswith(".weight")]
        if len(names) >= 2:
            return c, names
    return (ctx.calls[-1] if ctx.calls else None), ctx.used


@entry(
    "dtype.mismatch",
    r"expected m1 and m2 to have the same dtype"
    r"|(?:mat1 and mat2|self and mat2|mat1 and vec|self and vec|input tensors) must have the same dtype"
    r"|expected scalar type (?P<want>\w+) but found (?P<got>\w+)"
    r"|Input type \(\w+\) and (?:bias|weight) type \(\w+\) should be the same"
    r"|Found dtype \w+ but expected \w+"
    r"|expected both vectors to have same dtype"
    r"|RNN input dtype \(torch\.\w+\) does not match weight dtype",
    "RuntimeError",
    "ValueError",
)
def mismatch(ctx: ErrorContext, m: re.Match[str]) -> str:
    call, names = _operands(ctx)
    dtypes = {n: ctx.record(n).dtype for n in names}
    if len(set(dtypes.values())) < 2:
        return (
            f"{call.text if call else 'The operation'} on {ctx.where} mixes tensors of different dtypes (e.g. float32 "
            "and float64, or an integer input to a float layer); this operation does not convert them. Fix: convert "
            "one side with .to(other.dtype), .float() or .double()."
        )
    said = ", ".join(f"{n} is {d}" for n, d in dtypes.items())
    params = [n for n in names if call is not None and n.startswith(call.callee + ".")]
    if params:
        inputs = [n for n in names if n not in params]
        target = dtypes[params[0]]
        who = inputs[0] if inputs else "the input"
        layer = call.callee if call else "the layer"
        fix = (
            f"{who}.to(torch.{target}) (or {who}.float()) to match {layer}'s parameters, or convert the layer "
            f"with {layer}.to(torch.{dtypes.get(who, 'float64')})"
        )
    else:
        keep = next((n for n in names if dtypes[n] == "float32"), names[0])
        other = next(n for n in names if dtypes[n] != dtypes[keep])
        fix = f"convert one side: {other}.to({keep}.dtype) (here torch.{dtypes[keep]})"
    return (
        f"{call.text if call else 'The operation'} on {ctx.where}: {said}. This operation needs one dtype and does "
        f"not convert for you. Fix: {fix}."
    )


_CATEGORY = {"Bool": "boolean", "Byte": "integer", "Char": "integer", "Short": "integer", "Int": "integer"}
_CATEGORY |= {"Long": "integer", "UInt16": "integer", "UInt32": "integer", "UInt64": "integer"}


def _category(scalar_type: str) -> str:
    """``Float`` -> ``floating-point``, ``Long`` -> ``integer`` (torch's scalar type names in messages)."""
    if scalar_type.startswith("Complex"):
        return "complex"
    return _CATEGORY.get(scalar_type, "floating-point")


def _cast_rule(result: str, out: str) -> str:
    """The rule torch applied, in words: in place, a result is cast only to a dtype of its own category
    or a higher one (bool < integer < floating point < complex), never down a category."""
    return (
        f"a {result} result is {_category(result)} and the tensor is {_category(out)}: torch stores a result "
        f"into an existing tensor only when its dtype is of the same category or a higher one (bool < integer "
        f"< floating point < complex). Within a category it rounds silently (float64 values go into a float16 "
        f"tensor), but it won't go down one, where information would be lost (the fractions, for a float result "
        f"into an integer tensor). copy_ is the exception: it converts to any dtype (i.copy_(f) drops f's fractions)"
    )


@entry("dtype.cast", r"result type (?P<result>\w+) can't be cast to the desired output type (?P<out>\w+)")
def cast(ctx: ErrorContext, m: re.Match[str]) -> str:
    call = ctx.call(in_place=True)
    who = ctx.tensor(call.receiver) if call else None
    rule = _cast_rule(m["result"], m["out"])
    if call is None or who is None:
        out = next((c for c in ctx.calls if "out=" in " ".join(c.args)), None)
        where = f"{out.text} on {ctx.where}" if out else f"The operation on {ctx.where}"
        return (
            f"{where}: the result must be stored in the {m['out']} tensor given as out=, and {rule}. Fix: store "
            f"into a {m['result']} tensor (call it without out=, or give out= a {m['result']} tensor), or, to convert "
            f"on purpose, copy the result in with copy_."
        )
    return (
        f"{call.text} on {ctx.where} writes a {m['result']} result into {who}, which is {ctx.record(who).dtype}; "
        f"{rule}. Fix: {out_of_place(call)} (a new {m['result']} tensor), or make {who} floating first: "
        f"{who} = {who}.float()."
    )


@entry(
    "dtype.float-only",
    r"could not infer output dtype\. Input dtype must be either a floating point or complex dtype\. Got: (?P<got>\w+)"
    r"|(?P<op>std and var) only support floating point and complex dtypes"
    r"|\"(?P<kernel>\w+)\" not implemented for '(?P<dtype>\w+)'",
    "RuntimeError",
    "NotImplementedError",
)
def float_only(ctx: ErrorContext, m: re.Match[str]) -> str:
    call = next((c for c in reversed(ctx.calls) if ctx.tensor(c.receiver) or ctx.tensor(c.arg(0))), None)
    who = (ctx.tensor(call.receiver) or ctx.tensor(call.arg(0))) if call else None
    what = (
        f"{who} is {ctx.record(who).dtype}" if who else f"the input is {m['got'] or m['dtype'] or 'an integer tensor'}"
    )
    fixed = (
        f"{who}.float().{call.name}({', '.join(call.args)})"
        if who and call and call.receiver == who
        else f"{who or 't'}.float() first"
    )
    return (
        f"{call.text if call else 'This operation'} on {ctx.where}: {what}, and this operation is defined only for "
        f"floating-point tensors here (a mean or softmax of integers would have to be rounded). Fix: {fixed}."
    )


@entry(
    "device.mismatch",
    r"Expected all tensors to be on the same device|is not on the expected device|found at least two devices",
    "RuntimeError",
)
def device_mismatch(ctx: ErrorContext, m: re.Match[str]) -> str:
    call, names = _operands(ctx)
    devices = {n: ctx.record(n).device for n in names}
    if len(set(devices.values())) < 2:
        devices = {n: ctx.record(n).device for n in ctx.used}
    if len(set(devices.values())) < 2:
        return (
            f"The operation on {ctx.where} mixes tensors on different devices; torch never moves data between devices "
            "implicitly. Fix: move one side with .to(other.device)."
        )
    said = ", ".join(f"{n} is on {d}" for n, d in devices.items())
    first = next(iter(devices))
    other = next(n for n in devices if devices[n] != devices[first])
    return (
        f"{call.text if call else 'The operation'} on {ctx.where}: {said}. The tensors are on different devices, "
        f"and torch never copies between devices for you. Fix: {other} = {other}.to({first}.device) before this line "
        f"(for a module: move the module with .to(device))."
    )


@entry("scalar.bool", r"Boolean value of Tensor with more than one (?:value|element) is ambiguous")
def boolean(ctx: ErrorContext, m: re.Match[str]) -> str:
    names = ctx.used
    who = listed(names) or "the tensor"
    test = _condition(ctx) or (f"{names[0]} > 0" if names else "t > 0")
    return (
        f"On {ctx.where}, Python needs one True/False from {test}, a tensor of {who} with several elements (a "
        f"comparison of tensors gives one bool per element). Fix: say which you mean: ({test}).all() or "
        f"({test}).any(); torch.equal(a, b) compares whole tensors."
    )


def _condition(ctx: ErrorContext) -> str | None:
    """The test of an if/while/assert statement, or a bool()/and/or/not operand, as written."""
    import ast

    if ctx.tree is None:
        return None
    for node in ast.walk(ctx.tree):
        if isinstance(node, (ast.If, ast.While, ast.Assert, ast.IfExp)):
            return ast.unparse(node.test)
    return None


@entry(
    "scalar.python-number",
    r"only one element tensors can be converted to Python scalars",
    "ValueError",
    "TypeError",
    "RuntimeError",
)
def python_number(ctx: ErrorContext, m: re.Match[str]) -> str:
    call = next((c for c in ctx.calls if c.name in ("float", "int", "bool", "complex") and ctx.tensor(c.arg(0))), None)
    who = ctx.tensor(call.arg(0)) if call else (ctx.used[0] if ctx.used else None)
    size = f"{who} has shape {ctx.shape(who)}" if who else "the tensor has several elements"
    return (
        f"{call.text if call else 'The conversion'} on {ctx.where}: {size}, but a Python number holds one value. "
        f"Fix: reduce first ({who or 't'}.sum()), pick one element, or use {who or 't'}.tolist()."
    )
