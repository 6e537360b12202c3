"""Limit checks: every size a script builds is bounded before (or as) it is built.

Each check raises ``Limits.exceeded`` (a LimitExceeded step) or NotAllowedError. Binary
operators are a table, the way simpleeval's operator table carries ``safe_power``: each
entry has the operator, its in-place form and the guards that run before it.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from tcopy_cli.errors import NotAllowedError
from tcopy_cli.limits import Limits
from tcopy_cli.script import alloc
from tcopy_cli.script.sandbox import check_value, type_name

Guard = Callable[[Limits, Any, Any], None]
"""Checks ``left OP right`` before it is computed; raises if the result would be too large."""

_SPEC_NUMBER = re.compile(r"\d+")
_PERCENT_WIDTH = re.compile(r"%[-#0 +]*(\d+)")


def _ints(left: Any, right: Any) -> bool:
    return isinstance(left, int) and isinstance(right, int)


def _power(lim: Limits, left: Any, right: Any) -> None:
    if _ints(left, right) and right > 0 and abs(left) > 1 and right * left.bit_length() > lim.max_int_bits:
        raise lim.exceeded("max_int_bits", "the integer power is too large")


def _shift(lim: Limits, left: Any, right: Any) -> None:
    if _ints(left, right) and right > 0 and left.bit_length() + right > lim.max_int_bits:
        raise lim.exceeded("max_int_bits", "the shifted integer is too large")


def _product(lim: Limits, left: Any, right: Any) -> None:
    if _ints(left, right) and left.bit_length() + right.bit_length() > lim.max_int_bits:
        raise lim.exceeded("max_int_bits", "the integer product is too large")
    for seq, n in ((left, right), (right, left)):
        if isinstance(seq, (str, list, tuple, bytes)) and isinstance(n, int) and len(seq) * max(n, 0) > lim.max_str_len:
            raise lim.exceeded("max_str_len", "the repeated sequence is too long")


def _concatenation(lim: Limits, left: Any, right: Any) -> None:
    if isinstance(left, (str, list, tuple)) and isinstance(right, type(left)):
        if len(left) + len(right) > lim.max_str_len:
            raise lim.exceeded("max_str_len", "the concatenation is too long")
    elif isinstance(left, list) and not isinstance(right, list):  # lst += iterable
        try:
            grown = len(left) + len(right)
        except TypeError:
            return
        if grown > lim.max_str_len:
            raise lim.exceeded("max_str_len", "the list would grow too long")


def _percent_format(lim: Limits, left: Any, right: Any) -> None:
    if not isinstance(left, str):
        return
    items = right if isinstance(right, tuple) else (right,)
    if not all(isinstance(i, (int, float, str, bool)) or i is None for i in items):
        raise NotAllowedError("'%' formatting is allowed with numbers and strings only; use an f-string")
    widths = [int(n) for n in _PERCENT_WIDTH.findall(left) if len(n) < 12]
    if "*" in left:
        widths += [abs(i) for i in items if isinstance(i, int)]
    widths += [len(i) for i in items if isinstance(i, str)]
    if sum(widths) + len(left) > lim.max_str_len:
        raise lim.exceeded("max_str_len", "the formatted string would be too long")


def _broadcast(lim: Limits, left: Any, right: Any) -> None:
    """NumPy arrays: the broadcast result's size."""
    if not (isinstance(left, np.ndarray) or isinstance(right, np.ndarray)):
        return
    shapes = [tuple(v.shape) for v in (left, right) if isinstance(v, (np.ndarray, torch.Tensor))]
    try:
        numel = math.prod(np.broadcast_shapes(*shapes))
    except ValueError:
        return
    if numel > lim.max_elements:
        raise lim.exceeded("max_elements", f"the result would have {numel:,} elements")


def _tensor_result(name: str) -> Guard:
    def guard(lim: Limits, left: Any, right: Any) -> None:
        tensors = [v for v in (left, right) if isinstance(v, torch.Tensor)]
        if not tensors:
            return
        numel = alloc.estimate_numel(name, tensors, {})
        if numel is not None and numel > lim.max_elements:
            raise lim.exceeded("max_elements", f"the result would have {numel:,} elements")

    return guard


_ELEMENTWISE = (_broadcast, _tensor_result("binary"))


@dataclass(frozen=True)
class BinaryOperator:
    """One binary operator: how to apply it, in place (``+=``) or not, and its guards."""

    apply: Callable[[Any, Any], Any]
    in_place: Callable[[Any, Any], Any]
    guards: tuple[Guard, ...] = _ELEMENTWISE


BINARY_OPERATORS: dict[type[ast.operator], BinaryOperator] = {
    ast.Add: BinaryOperator(operator.add, operator.iadd, (_concatenation, *_ELEMENTWISE)),
    ast.Sub: BinaryOperator(operator.sub, operator.isub),
    ast.Mult: BinaryOperator(operator.mul, operator.imul, (_product, *_ELEMENTWISE)),
    ast.Div: BinaryOperator(operator.truediv, operator.itruediv),
    ast.FloorDiv: BinaryOperator(operator.floordiv, operator.ifloordiv),
    ast.Mod: BinaryOperator(operator.mod, operator.imod, (_percent_format, *_ELEMENTWISE)),
    ast.Pow: BinaryOperator(operator.pow, operator.ipow, (_power, *_ELEMENTWISE)),
    # A matrix product's size is not a broadcast: only torch's estimate applies.
    ast.MatMult: BinaryOperator(operator.matmul, operator.imatmul, (_tensor_result("__matmul__"),)),
    ast.LShift: BinaryOperator(operator.lshift, operator.ilshift, (_shift, *_ELEMENTWISE)),
    ast.RShift: BinaryOperator(operator.rshift, operator.irshift),
    ast.BitAnd: BinaryOperator(operator.and_, operator.iand),
    ast.BitOr: BinaryOperator(operator.or_, operator.ior),
    ast.BitXor: BinaryOperator(operator.xor, operator.ixor),
}


# random's functions whose result grows with an argument: its position (None: keyword only, k=).
_RANDOM_SIZES: dict[str, int | None] = {"sample": 1, "choices": None, "getrandbits": 0}


class Guards:
    """The limit checks of one run."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits

    def binop(self, op: ast.operator, left: Any, right: Any, in_place: bool = False) -> Any:
        """``left OP right`` (or ``left OP= right``), checked before and after."""
        entry = BINARY_OPERATORS[type(op)]
        if in_place and isinstance(left, (list, dict, set)):  # d |= x is d.update(x): data only, at any depth
            check_argument(right, strict=True)
        for guard in entry.guards:
            guard(self.limits, left, right)
        result = (entry.in_place if in_place else entry.apply)(left, right)
        self.result(result)
        return result

    def size(self, value: Any) -> None:
        """A value about to be materialised item by item (list(x), *x, unpacking)."""
        try:
            n = len(value)
        except TypeError:
            return
        if n > self.limits.max_iterations:
            raise self.limits.exceeded("max_iterations", f"this would materialise {n:,} items")

    def loop(self, count: int) -> bool:
        """Whether turn ``count`` of a for or while loop is past --max-iterations."""
        return count > self.limits.max_iterations

    def loop_error(self) -> Exception:
        """The error a loop past --max-iterations reports on its header."""
        return self.limits.exceeded("max_iterations", f"the loop ran more than {self.limits.max_iterations} iterations")

    def comprehension(self, count: int, total: int) -> None:
        """Turn ``count`` of one comprehension, ``total`` turns of all of them in the run."""
        lim = self.limits
        if total > lim.max_iterations * 10:
            raise lim.exceeded("max_iterations", "the script's loops and comprehensions ran too long in all")
        if count > lim.max_iterations:
            raise lim.exceeded("max_iterations", f"the comprehension ran more than {lim.max_iterations} times")

    def call(self, name: str, args: list[Any], kwargs: dict[str, Any], self_tensor: torch.Tensor | None) -> None:
        """A torch function or method whose result size is known from its arguments."""
        lim = self.limits
        if name == "tolist" and self_tensor is not None and self_tensor.numel() > lim.max_iterations:
            raise lim.exceeded("max_iterations", f"tolist() of {self_tensor.numel():,} elements")
        if name in _RANDOM_SIZES and self_tensor is None:
            self._random(name, args, kwargs)
        numel = alloc.estimate_numel(name, args, kwargs, self_tensor)
        if numel is not None and numel > lim.max_elements:
            raise lim.exceeded("max_elements", f"{name}() would create a tensor of {numel:,} elements")

    def _random(self, name: str, args: list[Any], kwargs: dict[str, Any]) -> None:
        """random.sample/choices build k items; random.getrandbits(k) a k-bit integer."""
        lim = self.limits
        position = _RANDOM_SIZES[name]
        k = kwargs.get("k") if position is None or len(args) <= position else args[position]
        if not isinstance(k, int):
            return
        if name == "getrandbits" and k > lim.max_int_bits:
            raise lim.exceeded("max_int_bits", f"getrandbits({k:,}) is too large an integer")
        if name != "getrandbits" and k > lim.max_iterations:
            raise lim.exceeded("max_iterations", f"{name}() would build {k:,} items")

    def builtin(self, name: str, args: list[Any], kwargs: dict[str, Any]) -> None:
        """Builtins whose result could outgrow the limits before any check sees it."""
        lim = self.limits
        if name in ("str", "print"):
            total = sum(self.repr_size(a) for a in args)
            if total > lim.max_str_len:
                raise lim.exceeded("max_str_len", f"{name}() would build about {total:,} characters")
        elif name == "round":
            digits = args[1] if len(args) > 1 else kwargs.get("ndigits")
            if isinstance(digits, int) and abs(digits) * 3.33 > lim.max_int_bits:
                raise lim.exceeded("max_int_bits", "round() with so many digits needs a huge integer")
        elif name == "sum":
            start = args[1] if len(args) > 1 else kwargs.get("start")
            if isinstance(start, (list, tuple, str)) and args:
                total = len(start) + sum(len(x) for x in args[0] if isinstance(x, (list, tuple, str)))
                if total > lim.max_str_len:
                    raise lim.exceeded("max_str_len", f"sum() would build {total:,} items")

    def method(self, name: str, base: Any, args: list[Any]) -> None:
        """Methods of strings, lists and arrays whose results are sized before they are built."""
        lim = self.limits
        if isinstance(base, str):
            size = None
            if name == "replace" and len(args) >= 2 and isinstance(args[0], str) and isinstance(args[1], str):
                count = base.count(args[0]) if args[0] else len(base) + 1
                size = len(base) + count * (len(args[1]) - len(args[0]))
            elif name == "join" and args:
                items = args[0]
                if isinstance(items, (list, tuple)):
                    size = sum(len(x) for x in items if isinstance(x, str)) + len(base) * max(len(items) - 1, 0)
            if size is not None and size > lim.max_str_len:
                raise lim.exceeded("max_str_len", f"{name}() would build {size:,} characters")
        elif isinstance(base, list) and name in ("extend", "append", "insert"):
            added = 1
            if name == "extend" and args:
                try:
                    added = len(args[0])
                except TypeError:
                    added = 0
            if len(base) + added > lim.max_str_len:
                raise lim.exceeded("max_str_len", f"the list would grow to {len(base) + added:,} items")
        elif isinstance(base, np.ndarray) and name == "tolist" and base.size > lim.max_iterations:
            raise lim.exceeded("max_iterations", f"tolist() of {base.size:,} elements")
        elif (
            isinstance(base, (torch.UntypedStorage, torch.TypedStorage))
            and name == "tolist"
            and base.size() > lim.max_iterations
        ):
            raise lim.exceeded("max_iterations", f"tolist() of a storage of {base.size():,} items")

    def index(self, base: Any, index: Any) -> None:
        """``base[index]`` of a tensor or array (advanced indexing can grow the result)."""
        if isinstance(base, (torch.Tensor, np.ndarray)):
            numel = alloc.estimate_index_numel(tuple(base.shape), index)
            if numel is not None and numel > self.limits.max_elements:
                raise self.limits.exceeded("max_elements", f"this indexing would create {numel:,} elements")

    def text(self, text: str, what: str) -> None:
        """A string literal or a built string."""
        if len(text) > self.limits.max_str_len:
            raise self.limits.exceeded("max_str_len", what)

    def items(self, items: list[Any]) -> None:
        """A list or tuple display."""
        if len(items) > self.limits.max_str_len:
            raise self.limits.exceeded("max_str_len", "the list is too long")

    def formatted(self, value: Any) -> None:
        """A value about to be formatted into an f-string."""
        if self.repr_size(value) > self.limits.max_str_len:
            raise self.limits.exceeded("max_str_len", "the formatted value would be too long")

    def format_spec(self, spec: str) -> None:
        """Widths in an f-string format spec (``{x:>1000000000}``)."""
        for num in _SPEC_NUMBER.findall(spec):
            if len(num) > 7 or int(num) > self.limits.max_str_len:
                raise self.limits.exceeded("max_str_len", "the f-string format width is too large")

    def output(self, printed: int) -> None:
        """Characters printed so far."""
        if printed > self.limits.max_output:
            raise self.limits.exceeded("max_output", "the script printed too much")

    def repr_size(self, value: Any, depth: int = 0) -> int:
        """A cheap upper estimate of len(str(value)), stopping once over the limit."""
        if isinstance(value, str):
            return len(value) + 2
        if isinstance(value, torch.Tensor):
            return min(value.numel(), 1000) * 16 + 200
        if isinstance(value, np.ndarray):
            return min(value.size, 1000) * 16 + 200
        if isinstance(value, (list, tuple, set, dict)) and depth < 20:
            items = list(value.items()) if isinstance(value, dict) else list(value)
            total = 2
            for item in items:
                total += 2 + (
                    self.repr_size(item[0], depth + 1) + self.repr_size(item[1], depth + 1)
                    if isinstance(value, dict)
                    else self.repr_size(item, depth + 1)
                )
                if total > self.limits.max_str_len:
                    return total
            return total
        if isinstance(value, int) and not isinstance(value, bool):
            return value.bit_length() // 3 + 2
        return 64

    def result(self, result: Any) -> None:
        """Any value a call, operator or index produced."""
        lim = self.limits
        if isinstance(result, torch.Tensor):
            if result.numel() > lim.max_elements:
                raise lim.exceeded("max_elements", f"the result has {result.numel():,} elements")
        elif isinstance(result, np.ndarray):
            if result.dtype.hasobject:
                raise NotAllowedError("NumPy arrays of Python objects are not allowed (dtype=object)")
            if result.size > lim.max_elements:
                raise lim.exceeded("max_elements", f"the result has {result.size:,} elements")
        elif isinstance(result, str) and len(result) > lim.max_str_len:
            raise lim.exceeded("max_str_len", "the resulting string is too long")
        elif isinstance(result, (list, tuple)) and len(result) <= 10_000:
            for item in result:
                if isinstance(item, torch.Tensor) and item.numel() > lim.max_elements:
                    raise lim.exceeded("max_elements", f"the result has {item.numel():,} elements")


def check_argument(value: Any, strict: bool) -> None:
    """A value passed to a call: data only (``strict``: nothing callable either), at any depth."""
    check_value(value, strict)


def check_container(base: Any) -> None:
    """Only tensors, lists, dicts and arrays take item assignment and deletion."""
    if not isinstance(base, (torch.Tensor, list, dict, np.ndarray)):
        raise TypeError(f"'{type_name(base)}' object does not support item assignment")
