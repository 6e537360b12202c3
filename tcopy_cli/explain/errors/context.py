"""What an error explanation knows: the failing statement as written, its tensors, earlier steps.

The statement's text is parsed again here (it is data in the Step record) to find the
operations it performs as ``CallSite`` values: calls, operators, indexing and
augmented assignments, innermost first (the order Python evaluates them). An
operation record made by the run can be turned into the same ``CallSite`` values.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from tcopy_cli.explain.facts import ExplainState, Origin, StepFacts, names_text
from tcopy_cli.trace.records import ErrorInfo, Step, TensorRecord
from tcopy_cli.trace.scriptnames import is_local

_OPERATORS: dict[type[ast.AST], tuple[str, str]] = {
    ast.Add: ("add", "+"),
    ast.Sub: ("sub", "-"),
    ast.Mult: ("mul", "*"),
    ast.Div: ("div", "/"),
    ast.FloorDiv: ("floor_divide", "//"),
    ast.Mod: ("remainder", "%"),
    ast.Pow: ("pow", "**"),
    ast.MatMult: ("matmul", "@"),
    ast.BitAnd: ("bitwise_and", "&"),
    ast.BitOr: ("bitwise_or", "|"),
    ast.BitXor: ("bitwise_xor", "^"),
}


@dataclass(frozen=True)
class CallSite:
    """One operation of a statement: a call, an operator, an index or an attribute write.

    ``name`` is the function or method name (``mul_``, ``cat``, ``matmul`` for ``@``,
    ``add_`` for ``+=``, ``getitem``/``setitem`` for indexing, ``setattr`` for ``x.attr = v``);
    ``receiver`` is the expression before the dot (``y`` in ``y.mul_(2)``), the left
    operand, or the indexed value; ``args`` the other operands as written, keyword
    arguments as ``k=v``; ``callee`` the called expression (``lin`` in ``lin(x)``).
    """

    text: str
    name: str
    receiver: str | None = None
    args: tuple[str, ...] = ()
    callee: str = ""
    in_place: bool = False

    @property
    def operands(self) -> tuple[str, ...]:
        """Receiver (if any), then the arguments, as written."""
        return ((self.receiver,) if self.receiver is not None else ()) + self.args

    @property
    def inputs(self) -> tuple[str, ...]:
        """The values operated on, as written: the operands without a module receiver (``torch`` in ``torch.mm``)."""
        positional = tuple(a for a in self.args if not _is_keyword(a))
        if self.receiver is None or self.receiver in MODULES:
            return positional
        return (self.receiver, *positional)

    def arg(self, position: int, keyword: str = "") -> str | None:
        """A positional argument as written, or the keyword one."""
        positional = [a for a in self.args if not _is_keyword(a)]
        if position < len(positional):
            return positional[position]
        for a in self.args:
            if keyword and a.startswith(keyword + "="):
                return a[len(keyword) + 1 :]
        return None


MODULES = frozenset(
    {"torch", "F", "nn", "np", "numpy", "math", "copy", "torch.nn", "torch.nn.functional", "torch.linalg", "torch.fft"}
    | {"torch.special", "torch.autograd", "torch.optim", "optim", "functional"}
)
"""Receivers that are modules, not values (the names scripts import torch's modules as)."""


def _is_keyword(arg: str) -> bool:
    head, sep, _ = arg.partition("=")
    return bool(sep) and head.isidentifier() and not arg.startswith(head + "==")


def parse_statement(source: str) -> ast.AST | None:
    """The statement's AST; a compound statement's header (``if a:``) parses with a body added."""
    text = source.strip()
    if text.startswith("elif "):
        text = text[2:]
    for attempt in (text, text + " pass", text + "\n    pass"):
        try:
            return ast.parse(attempt)
        except SyntaxError:
            continue
    return None


class _Collector(ast.NodeVisitor):
    """CallSites in evaluation order (children before the node that uses them)."""

    def __init__(self) -> None:
        self.calls: list[CallSite] = []

    def visit_Call(self, node: ast.Call) -> None:
        self.generic_visit(node)
        args = tuple(ast.unparse(a) for a in node.args) + tuple(
            f"{k.arg}={ast.unparse(k.value)}" if k.arg else f"**{ast.unparse(k.value)}" for k in node.keywords
        )
        func = node.func
        if isinstance(func, ast.Attribute):
            name, receiver = func.attr, ast.unparse(func.value)
        else:
            name, receiver = ast.unparse(func), None
        self.calls.append(
            CallSite(ast.unparse(node), name, receiver, args, ast.unparse(func), in_place=_in_place_name(name))
        )

    def visit_BinOp(self, node: ast.BinOp) -> None:
        self.generic_visit(node)
        name, _ = _OPERATORS.get(type(node.op), ("binary", "?"))
        self.calls.append(CallSite(ast.unparse(node), name, ast.unparse(node.left), (ast.unparse(node.right),)))

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.generic_visit(node)
        name, _ = _OPERATORS.get(type(node.op), ("binary", "?"))
        self.calls.append(
            CallSite(ast.unparse(node), name + "_", ast.unparse(node.target), (ast.unparse(node.value),), in_place=True)
        )

    def visit_Subscript(self, node: ast.Subscript) -> None:
        self.generic_visit(node)
        store = isinstance(node.ctx, ast.Store)
        self.calls.append(
            CallSite(
                ast.unparse(node),
                "setitem" if store else "getitem",
                ast.unparse(node.value),
                (ast.unparse(node.slice),),
                in_place=store,
            )
        )

    def visit_Assign(self, node: ast.Assign) -> None:
        self.generic_visit(node)
        for target in node.targets:
            if isinstance(target, ast.Attribute):
                self.calls.append(
                    CallSite(
                        ast.unparse(node), "setattr", ast.unparse(target.value), (target.attr, ast.unparse(node.value))
                    )
                )


def _in_place_name(name: str) -> bool:
    return name.endswith("_") and not name.endswith("__")


def call_sites(tree: ast.AST | None) -> list[CallSite]:
    """The operations of a parsed statement, innermost first."""
    if tree is None:
        return []
    collector = _Collector()
    collector.visit(tree)
    return collector.calls


def mentions(tree: ast.AST | None) -> list[str]:
    """Every name or dotted name written in the statement, in source order."""
    if tree is None:
        return []
    found: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Name, ast.Attribute)):
            try:
                text = ast.unparse(node)
            except Exception:  # pragma: no cover - unparse of a parsed node does not fail
                continue
            found.append((getattr(node, "lineno", 0), getattr(node, "col_offset", 0), text))
    return [t for _, _, t in sorted(found)]


@dataclass
class ErrorContext:
    """The failing step, its statement's operations and tensors, and what earlier steps left."""

    error: ErrorInfo
    step: Step | None = None
    state: ExplainState = field(default_factory=ExplainState)
    tree: ast.AST | None = None
    calls: list[CallSite] = field(default_factory=list)

    @classmethod
    def of(cls, facts: StepFacts, error: ErrorInfo) -> ErrorContext:
        """The context of a failing step."""
        tree = parse_statement(facts.step.source)
        return cls(error, facts.step, facts.state, tree, call_sites(tree), before=facts.before)

    keys: dict[str, str] = field(default_factory=dict)
    """Each name as the statement can write it -> the record's name (``x`` -> ``f:x`` inside ``f``)."""
    before: dict[str, TensorRecord] = field(default_factory=dict)
    """The tensors before the failing statement, by the records' names."""

    def changed_values(self, name: str) -> tuple[str, str] | None:
        """(before, after) previews of a tensor whose listed values the failing statement changed."""
        key = self.keys.get(name, name)
        old, now = self.before.get(key), self.tensors.get(name)
        if old is None or now is None or old.object_id != now.object_id or old.values is None:
            return None
        return (old.preview, now.preview) if old.values != now.values else None

    def __post_init__(self) -> None:
        if self.step is not None and not self.keys:
            self.keys = visible_names(self.step)

    @property
    def tensors(self) -> dict[str, TensorRecord]:
        """The tensors as they were when the statement failed, by the names the statement can use."""
        if self.step is None:
            return {}
        records = self.step.tensors
        return {name: records[key] for name, key in self.keys.items()}

    @property
    def line(self) -> int:
        """The failing statement's line (0 when unknown)."""
        return self.step.line if self.step is not None else 0

    @property
    def where(self) -> str:
        """``line 3`` (or ``this line`` when unknown)."""
        return f"line {self.line}" if self.line else "this line"

    @property
    def used(self) -> list[str]:
        """Tensor names the statement mentions, in source order, each once."""
        return list(dict.fromkeys(n for n in mentions(self.tree) if n in self.tensors))

    def tensors_in(self, *expressions: str | None) -> list[str]:
        """Tensor names mentioned in the given expressions (as written), in order, each once."""
        out: list[str] = []
        for text in expressions:
            if text is None:
                continue
            out.extend(n for n in mentions(parse_statement(text)) if n in self.tensors)
        return list(dict.fromkeys(out))

    def tensor(self, expression: str | None) -> str | None:
        """The tensor name an expression is (``x``, ``lin.weight``), or None."""
        if expression is None:
            return None
        text = expression.strip()
        return text if text in self.tensors else None

    def call(self, *names: str, in_place: bool | None = None) -> CallSite | None:
        """The first (innermost) operation with one of these names (any, if none given)."""
        for c in self.calls:
            if (not names or c.name in names) and (in_place is None or c.in_place == in_place):
                return c
        return None

    def record(self, name: str) -> TensorRecord:
        """The record of a tensor name known to exist."""
        return self.tensors[name]

    def shape(self, name: str) -> str:
        """``(4, 3)``: a tensor's shape as a tuple."""
        return shape_text(self.tensors[name].shape)

    def describe(self, name: str) -> str:
        """``x (4, 3) float32``."""
        r = self.tensors[name]
        return f"{name} {shape_text(r.shape)} {r.dtype}"

    def bound_at(self, name: str) -> Origin | None:
        """The earlier step that gave ``name`` its tensor."""
        origin = self.state.bound_at.get(self.keys.get(name, name))
        if origin is None or (self.step is not None and origin.index == self.step.index):
            return None
        return origin

    def made_at(self, name: str) -> str:
        """`` (made at line 2: v = a[1:])`` or ``""``."""
        origin = self.bound_at(name)
        return f" (made at line {origin.line}: {origin.source})" if origin else ""

    def module_parameters(self, callee: str) -> list[str]:
        """Tensor names that are parameters of a module the script calls as ``callee(...)``."""
        return [n for n in self.tensors if n.startswith(callee + ".") and "." not in n[len(callee) + 1 :]]

    def leaves_requiring_grad(self) -> list[str]:
        """Named leaves that require grad."""
        return [n for n, r in self.tensors.items() if r.is_leaf and r.requires_grad]


def visible_names(step: Step) -> dict[str, str]:
    """The tensor names a statement of ``step`` can write, mapped to the records' names.

    Inside a function, ``x`` is that function's local (recorded as ``f:x``) when it has
    one, else the module's ``x``; ``self.fc.weight`` is the one recorded module member
    ``<instance>.fc.weight`` (when exactly one instance has it).
    """
    module = {n: n for n in step.tensors if not is_local(n)}
    if step.function is None:
        return module
    prefix = step.function + ":"
    out = {n[len(prefix) :]: n for n in step.tensors if n.startswith(prefix)}  # locals first
    members: dict[str, list[str]] = {}
    for n in module:
        if "." in n:
            members.setdefault("self." + n.split(".", 1)[1], []).append(n)
    out.update({alias: found[0] for alias, found in members.items() if len(found) == 1 and alias not in out})
    out.update({n: n for n in module if n not in out})
    return out


def shape_text(shape: Sequence[int]) -> str:
    """``(4, 3)``, ``(3,)``, ``()``."""
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def listed(names: Iterable[str]) -> str:
    """``a``, ``a and b`` ..."""
    return names_text(list(names))


def out_of_place(call: CallSite) -> str:
    """The out-of-place form of an in-place call, as a statement for this script.

    ``y.mul_(2)`` -> ``y = y.mul(2)``; ``y *= 2`` -> ``y = y * 2``; ``y[0] = 5`` -> ``y = y.clone()``
    before the write.
    """
    receiver = call.receiver or "t"
    if call.name == "setitem":
        return f"{receiver} = {receiver}.clone() before {call.text}"
    if call.name == "copy_":
        return f"{receiver} = {call.arg(0) or '...'}.clone()"
    if call.name in _SYMBOLS and call.text.startswith(receiver) and f" {_SYMBOLS[call.name]}= " in call.text:
        return f"{receiver} = {receiver} {_SYMBOLS[call.name]} {call.args[0]}"
    return f"{receiver} = {receiver}.{call.name.rstrip('_')}({', '.join(call.args)})"


_SYMBOLS = {name + "_": symbol for name, symbol in _OPERATORS.values()}
