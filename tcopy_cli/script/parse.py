"""Parse a script and check it against the allow-list before anything runs."""

from __future__ import annotations

import ast
import io
import re
import symtable
import tokenize
from dataclasses import dataclass, field

from tcopy_cli.errors import ScriptRejected
from tcopy_cli.limits import Limits
from tcopy_cli.script import policy
from tcopy_cli.suggest import did_you_mean


@dataclass(frozen=True)
class Program:
    """A validated script: its module AST, source lines and where it came from."""

    tree: ast.Module
    source: str
    lines: list[str]
    origin: str
    comments: dict[int, str] = field(default_factory=dict)
    title: str = ""
    expects: dict[int, str] = field(default_factory=dict)
    """Line -> the exception class a trailing ``# expect: NAME`` comment names there."""

    def expectation(self, node: ast.stmt) -> str | None:
        """The exception class the statement is marked to raise (``# expect: NAME``), if any.

        The comment may end any line of a simple statement; for a block statement
        (``for``, ``if`` ...) only the lines of its header count.
        """
        if not self.expects:
            return None
        body = getattr(node, "body", None)
        if body:
            last = max(node.lineno, body[0].lineno - 1)
        else:
            last = node.end_lineno or node.lineno
        for n in range(node.lineno, last + 1):
            if n in self.expects:
                return self.expects[n]
        return None

    def statement_source(self, node: ast.stmt) -> str:
        """The source text of a simple statement, or the header line of a block (cached)."""
        cache: dict[int, str] = self.__dict__.setdefault("_sources", {})
        key = id(node)
        if key not in cache:
            cache[key] = self._statement_source(node)
        return cache[key]

    def _statement_source(self, node: ast.stmt) -> str:
        if isinstance(node, (ast.For, ast.If, ast.With, ast.While, ast.FunctionDef, ast.ClassDef, ast.Try)):
            return header_source(self.lines, node)
        seg = ast.get_source_segment(self.source, node)
        return seg if seg is not None else self.lines[node.lineno - 1].strip()


def header_source(lines: list[str], node: ast.stmt) -> str:
    """The text of a compound statement's header, e.g. ``for i in range(3):``."""
    body = getattr(node, "body", None)
    # The body starts at its first statement's decorators, if it has any.
    first = min([body[0].lineno, *(d.lineno for d in getattr(body[0], "decorator_list", []))]) if body else 0
    end = first - 1 if body else node.lineno
    end = max(end, node.lineno)
    text = " ".join(line.strip() for line in lines[node.lineno - 1 : end])
    if isinstance(node, ast.If) and lines[node.lineno - 1].lstrip().startswith("elif"):
        text = text.replace("elif", "if", 1)
    # A one-line block (``for i in x: y``) keeps only the header.
    if body and body[0].lineno == node.lineno:
        col = body[0].col_offset
        text = lines[node.lineno - 1][:col].strip()
    return text


# The nodes a script may contain. Exactly interp.NODE_HANDLERS plus interp.PART_NODES
# (tests/script/test_node_table.py checks it); listed here so parsing needs no torch.
_STMT_NODES: tuple[type, ...] = (
    ast.Expr,
    ast.Assign,
    ast.AugAssign,
    ast.AnnAssign,
    ast.Delete,
    ast.Pass,
    ast.Import,
    ast.ImportFrom,
    ast.For,
    ast.If,
    ast.With,
    ast.Break,
    ast.Continue,
    ast.FunctionDef,
    ast.Return,
    ast.Try,
    ast.ExceptHandler,
    ast.Raise,
    ast.Assert,
    ast.While,
    ast.ClassDef,
    ast.Global,
    ast.Nonlocal,
)
_EXPR_NODES: tuple[type, ...] = (
    ast.BoolOp,
    ast.BinOp,
    ast.UnaryOp,
    ast.IfExp,
    ast.Dict,
    ast.List,
    ast.Tuple,
    ast.Set,
    ast.Compare,
    ast.Call,
    ast.keyword,
    ast.JoinedStr,
    ast.FormattedValue,
    ast.Constant,
    ast.Attribute,
    ast.Subscript,
    ast.Starred,
    ast.Name,
    ast.Slice,
    ast.withitem,
    ast.alias,
    ast.Load,
    ast.Store,
    ast.Del,
    ast.operator,
    ast.unaryop,
    ast.cmpop,
    ast.boolop,
    ast.Lambda,
    ast.arguments,
    ast.arg,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
    ast.comprehension,
)

_REFUSED_WHY: dict[type, str] = {
    ast.AsyncFunctionDef: "async code is not supported",
    ast.AsyncFor: "async code is not supported",
    ast.AsyncWith: "async code is not supported",
    ast.Await: "async code is not supported",
    ast.Yield: "generators (yield) are not supported",
    ast.YieldFrom: "generators (yield) are not supported",
    ast.NamedExpr: "the walrus operator := is not supported",
    ast.Match: "match statements are not supported",
}
if hasattr(ast, "TryStar"):
    _REFUSED_WHY[ast.TryStar] = "except* is not supported"


def _allowed_import_names() -> str:
    return (
        "torch (also as NAME), torch.nn, torch.nn.functional, torch.nn.init, torch.optim, torch.autograd, "
        "numpy (with numpy.random), copy, math, time, timeit, random, pdb, itertools (count); "
        "any other module is a placeholder that fails where it is first used"
    )


def _offered(module: str) -> bool:
    """A module of a package tcopy offers itself: only the listed ones may be imported from it."""
    return module.split(".")[0] in policy.OFFERED_PACKAGES


def _placeholder_names(tree: ast.Module) -> frozenset[str]:
    """Names bound by imports of modules tcopy does not offer (placeholders at run time)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.asname or a.name.split(".")[0] for a in node.names if not _offered(a.name))
        elif isinstance(node, ast.ImportFrom) and not node.level and not _offered(node.module or ""):
            names.update(a.asname or a.name for a in node.names)
    return frozenset(names)


def _module_aliases(tree: ast.Module) -> dict[str, str]:
    """Names the script's imports bind to modules tcopy offers: ``F`` → ``torch.nn.functional``."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                module = a.name if a.asname else a.name.split(".")[0]  # import torch.nn binds torch
                if module in policy.ALLOWED_IMPORTS:
                    aliases[a.asname or module] = module
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            for a in node.names:
                if f"{node.module}.{a.name}" in policy.ALLOWED_IMPORTS:
                    aliases[a.asname or a.name] = f"{node.module}.{a.name}"
    return aliases


def _module_path(node: ast.expr, aliases: dict[str, str]) -> str | None:
    """The module a dotted name stands for (``F``, ``torch.nn.functional``), where it is one tcopy offers."""
    if not isinstance(node, (ast.Name, ast.Attribute)):
        return None
    first, *parts = ast.unparse(node).split(".")
    if not all(p.isidentifier() for p in (first, *parts)):  # a call or subscript on the way: not a module
        return None
    # An import's name, or a module's own (torch is there without an import)
    root = aliases.get(first, first if first in policy.ALLOWED_IMPORTS else None)
    if root is None:
        return None
    path = ".".join([root, *parts])
    return path if path in policy.ALLOWED_IMPORTS else None


def _root_name(node: ast.expr) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


class _Validator(ast.NodeVisitor):
    def __init__(
        self,
        limits: Limits,
        script_attrs: frozenset[str] = frozenset(),
        placeholders: frozenset[str] = frozenset(),
        tree: ast.Module | None = None,
    ) -> None:
        self.limits = limits
        self.tree = tree
        """The script (its imports name the modules a refusal's hint draws from)."""
        self.script_attrs = script_attrs
        # Names of unavailable modules: their attributes are not checked here, as their
        # first use fails at run time with a message that names the module.
        self.placeholders = placeholders
        self.depth = 0
        self.in_function = 0
        self.in_class = 0
        # Loops around the node being checked, within its own function (a def or lambda
        # starts again at 0: 'break' can't leave a function).
        self.in_loop = 0
        self.where: tuple[int, int] = (1, 0)

    def reject(self, node: ast.AST, message: str) -> ScriptRejected:
        # Operator and context nodes have no position: use the nearest node that has one.
        line = getattr(node, "lineno", None) or self.where[0]
        col = getattr(node, "col_offset", None)
        return ScriptRejected(message, line, (col if col is not None else self.where[1]) + 1)

    def generic_visit(self, node: ast.AST) -> None:
        if isinstance(node, ast.Module):
            super().generic_visit(node)
            return
        if getattr(node, "lineno", None) is not None:
            self.where = (node.lineno, node.col_offset)  # type: ignore[attr-defined]
        if type(node) in _REFUSED_WHY:
            raise self.reject(node, _REFUSED_WHY[type(node)])
        if not isinstance(node, _STMT_NODES + _EXPR_NODES + (ast.comprehension,)):
            raise self.reject(node, f"{type(node).__name__} is not allowed here")
        self.depth += 1
        if self.depth > self.limits.max_depth:
            raise self.reject(node, _too_deep(self.limits))
        super().generic_visit(node)
        self.depth -= 1

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name not in policy.ALLOWED_IMPORTS and _offered(alias.name):
                raise self.reject(
                    node, f"import of '{alias.name}' is not allowed; allowed modules: {_allowed_import_names()}"
                )
            self._check_bound_name(node, alias.asname or alias.name.split(".")[0])

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        mod = node.module or ""
        if node.level or (mod not in policy.ALLOWED_IMPORTS and _offered(mod)):
            raise self.reject(
                node, f"'from {mod} import ...' is not allowed; allowed modules: {_allowed_import_names()}"
            )
        allowed = policy.ALLOWED_IMPORTS.get(mod)
        for alias in node.names:
            if alias.name == "*":
                raise self.reject(node, f"'from {mod} import *' is not allowed: import the names you use")
            if allowed is not None and alias.name not in allowed:
                raise self.reject(node, f"'from {mod} import {alias.name}' is not allowed")
            self._check_bound_name(node, alias.asname or alias.name)

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        self.visit_Global(node)

    def visit_Global(self, node: ast.Global | ast.Nonlocal) -> None:
        for name in node.names:
            self._check_bound_name(node, name)
            if name in policy.FORBIDDEN_NAMES:
                raise self.reject(node, f"'{name}' is not allowed: {policy.FORBIDDEN_NAMES[name]}")

    def _check_bound_name(self, node: ast.AST, name: str) -> None:
        if name.startswith("_"):
            raise self.reject(node, f"names starting with '_' can't be bound: '{name}'")

    def visit_Name(self, node: ast.Name) -> None:
        name = node.id
        if name in policy.FORBIDDEN_NAMES:
            raise self.reject(node, f"'{name}' is not allowed: {policy.FORBIDDEN_NAMES[name]}")
        if name.startswith("__") and name not in policy.ALLOWED_DUNDER_NAMES:
            raise self.reject(node, f"names starting with '__' are not allowed: '{name}'")
        # A lone '_' is the usual throwaway name (for _ in range(3)); other '_' names are refused.
        if isinstance(node.ctx, (ast.Store, ast.Del)) and name.startswith("_") and name != "_":
            raise self.reject(node, f"names starting with '_' can't be assigned: '{name}'")
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        attr = node.attr
        if attr == "__init__" and _is_super_call(node.value) and isinstance(node.ctx, ast.Load):
            self.generic_visit(node)
            return
        if attr.startswith("_") and attr not in policy.UNDERSCORE_ATTRS:
            raise self.reject(node, f"attribute '{attr}' is not allowed: attributes starting with '_' are private")
        if attr in policy.UNDERSCORE_ATTRS and not isinstance(node.ctx, ast.Load):
            raise self.reject(node, f"'{attr}' is read-only")
        if _root_name(node.value) in self.placeholders:
            self.generic_visit(node)
            return
        if attr in policy.TORCH_FORBIDDEN and _is_module_base(node.value):
            raise self.reject(node, f"'{attr}' is not allowed: {policy.TORCH_FORBIDDEN[attr]}")
        if attr not in policy.ALL_ATTRIBUTE_NAMES and attr not in self.script_attrs:
            base = f"{node.value.id}." if isinstance(node.value, ast.Name) else "."
            module = _module_path(node.value, _module_aliases(self.tree) if self.tree is not None else {})
            if module is None:
                hint = did_you_mean(attr, policy.ALL_ATTRIBUTE_NAMES | self.script_attrs, prefix=base)
                raise self.reject(node, f"'.{attr}' is not in tcopy's allow-list of attributes and methods{hint}")
            # F.X, torch.X, np.X ...: a name that module offers, not any attribute of any value
            # (torch.get_state is none, F.inplace neither); the refusal's own hint tells of --trust.
            written = ast.unparse(node.value)
            hint = did_you_mean(attr, policy.ALLOWED_IMPORTS[module], prefix=f"{written}.")
            raise self.reject(node, f"'{written}.{attr}' is not in tcopy's allow-list{hint}")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        if not isinstance(node.func, (ast.Name, ast.Attribute)):
            raise self.reject(node, "only named functions and methods can be called (e.g. torch.ones(2), a.clone())")
        self.generic_visit(node)

    def visit_FormattedValue(self, node: ast.FormattedValue) -> None:
        if node.format_spec is not None:
            for part in ast.walk(node.format_spec):
                if isinstance(part, ast.FormattedValue):
                    raise self.reject(part, "nested fields in an f-string format spec are not allowed")
        self.generic_visit(node)

    def _check_arguments(self, args: ast.arguments) -> None:
        for a in args.posonlyargs + args.args + args.kwonlyargs + [x for x in (args.vararg, args.kwarg) if x]:
            if a.arg.startswith("__"):
                raise self.reject(a, f"parameter names starting with '__' are not allowed: '{a.arg}'")

    def _check_decorators(self, node: ast.FunctionDef) -> list[ast.expr]:
        """The decorators to visit as expressions (``@staticmethod`` & co. are names checked here)."""
        visit: list[ast.expr] = []
        kinds = 0
        for dec in node.decorator_list:
            if isinstance(dec, ast.Name) and dec.id in policy.METHOD_DECORATORS:
                if not self.in_class:
                    raise self.reject(dec, f"@{dec.id} is allowed on methods of a class only")
                kinds += 1
                if kinds > 1:
                    raise self.reject(dec, "a method may have one of @staticmethod, @classmethod, @property")
                continue
            if not _is_grad_mode_decorator(dec):
                raise self.reject(
                    dec,
                    "the only decorators supported are @torch.no_grad(), @torch.enable_grad(), "
                    "@torch.inference_mode(), @torch.set_grad_enabled(...) and, on methods, "
                    "@staticmethod, @classmethod and @property",
                )
            visit.append(dec)
        return visit

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        decorators, node.decorator_list = node.decorator_list, self._check_decorators(node)
        try:
            self._visit_function(node)
        finally:
            node.decorator_list = decorators

    def _visit_function(self, node: ast.FunctionDef) -> None:
        if self.in_class:
            if node.name.startswith("_") and node.name not in policy.ALLOWED_DUNDER_METHODS:
                raise self.reject(
                    node,
                    f"method '{node.name}' is not allowed: only __init__, forward and "
                    f"methods whose names don't start with '_'",
                )
        elif node.name.startswith("_") and node.name != "_":
            raise self.reject(node, f"function names starting with '_' are not allowed: '{node.name}'")
        self._check_arguments(node.args)
        self.in_function += 1
        # A function's body is not a class body, even inside a method: a def there is a plain function.
        saved_loop, self.in_loop = self.in_loop, 0
        saved_class, self.in_class = self.in_class, 0
        self.generic_visit(node)
        self.in_loop, self.in_class = saved_loop, saved_class
        self.in_function -= 1

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._check_arguments(node.args)
        self.in_function += 1
        self.generic_visit(node)
        self.in_function -= 1

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        if node.decorator_list:
            raise self.reject(node.decorator_list[0], "decorators are not supported")
        if self.in_function or self.in_class:
            raise self.reject(node, "classes can be defined at module level only")
        if node.keywords:
            raise self.reject(node, "class keywords (metaclass=...) are not supported")
        base_ok = len(node.bases) == 1 and (
            (isinstance(node.bases[0], ast.Attribute) and node.bases[0].attr in _CLASS_BASES)
            or (isinstance(node.bases[0], ast.Name) and node.bases[0].id in _CLASS_BASES)
        )
        if not base_ok:
            raise self.reject(
                node,
                "a class must derive from nn.Module or torch.autograd.Function (class Name(nn.Module):), nothing else",
            )
        if node.name.startswith("_"):
            raise self.reject(node, f"class names starting with '_' are not allowed: '{node.name}'")
        for item in node.body:
            docstring = isinstance(item, ast.Expr) and isinstance(item.value, ast.Constant)
            if not (isinstance(item, (ast.FunctionDef, ast.Pass)) or docstring):
                raise self.reject(item, "a class body may contain only methods (def) and a docstring")
        self.in_class += 1
        self.generic_visit(node)
        self.in_class -= 1

    def visit_Return(self, node: ast.Return) -> None:
        if not self.in_function:
            raise self.reject(node, "'return' outside a function")
        self.generic_visit(node)

    def _check_exception_names(self, node: ast.expr | None) -> None:
        names = node.elts if isinstance(node, ast.Tuple) else [node] if node is not None else []
        for n in names:
            if not (isinstance(n, ast.Name) and n.id in policy.SAFE_EXCEPTIONS):
                raise self.reject(
                    n if n is not None else names[0],
                    "only these exceptions can be caught or raised: " + ", ".join(sorted(policy.SAFE_EXCEPTIONS)),
                )

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        self._check_exception_names(node.type)
        if node.name is not None:
            self._check_bound_name(node, node.name)
        self.generic_visit(node)

    def visit_Raise(self, node: ast.Raise) -> None:
        if node.cause is not None:
            raise self.reject(node, "'raise ... from ...' is not supported")
        exc = node.exc
        if exc is not None:
            self._check_exception_names(exc.func if isinstance(exc, ast.Call) else exc)
        self.generic_visit(node)

    def visit_For(self, node: ast.For) -> None:
        if not _simple_target(node.target):
            raise self.reject(node, "a for loop may only bind names (for i in ..., for a, b in ...)")
        self._visit_loop(node)

    def visit_While(self, node: ast.While) -> None:
        self._visit_loop(node)

    def _visit_loop(self, node: ast.For | ast.While) -> None:
        # The body is inside the loop; its 'else' block is not, so it is checked apart.
        orelse, node.orelse = node.orelse, []
        self.in_loop += 1
        try:
            self.generic_visit(node)
        finally:
            node.orelse = orelse
            self.in_loop -= 1
        for stmt in orelse:
            self.visit(stmt)

    def visit_Break(self, node: ast.Break) -> None:
        if not self.in_loop:
            raise self.reject(node, "'break' outside a loop")

    def visit_Continue(self, node: ast.Continue) -> None:
        if not self.in_loop:
            raise self.reject(node, "'continue' outside a loop")

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            for sub in ast.walk(target):
                if isinstance(sub, ast.Starred):
                    raise self.reject(sub, "starred assignment (a, *b = ...) is not supported")
        self.generic_visit(node)


def _script_attributes(tree: ast.Module) -> frozenset[str]:
    """Attribute names a script's own classes define: their methods and self.X assignments."""
    names: set[str] = set()
    for cls in tree.body:
        if not isinstance(cls, ast.ClassDef):
            continue
        for node in ast.walk(cls):
            if isinstance(node, ast.FunctionDef):
                names.add(node.name)
            elif (
                isinstance(node, ast.Attribute)
                and isinstance(node.ctx, ast.Store)
                and isinstance(node.value, ast.Name)
                and node.value.id in ("self", "ctx")
            ):
                names.add(node.attr)
    return frozenset(n for n in names if not n.startswith("_"))


_CLASS_BASES = frozenset({"Module", "Function"})


def _is_grad_mode_decorator(node: ast.expr) -> bool:
    """``@torch.no_grad()``, ``@no_grad``, ``@torch.set_grad_enabled(False)`` ..."""
    func = node.func if isinstance(node, ast.Call) else node
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name in policy.GRAD_MODE_DECORATORS


def _is_super_call(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"


def _simple_target(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return True
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(_simple_target(e) for e in node.elts)
    return False


def _is_module_base(node: ast.expr) -> bool:
    # torch.load, T.load (T bound to torch), torch.utils.x ...: a plain name or a
    # dotted chain. The runtime check catches the rest.
    return isinstance(node, (ast.Name, ast.Attribute))


def _check_scopes(source: str, origin: str, tree: ast.Module) -> None:
    """Python's own scope errors (``nonlocal x`` with no enclosing ``x``, and the like),
    which ast.parse leaves to the compiler: symtable reports them without compiling."""
    if not any(isinstance(node, ast.Nonlocal) for node in ast.walk(tree)):
        return
    try:
        symtable.symtable(source, origin, "exec")
    except SyntaxError as exc:
        raise ScriptRejected(f"syntax error: {exc.msg}", exc.lineno or 1, exc.offset or 1) from None


def check_script_size(size: int, limits: Limits) -> None:
    """Refuse a script of ``size`` bytes if it is over --max-script-bytes (before it is parsed)."""
    if size > limits.max_script_bytes:
        raise ScriptRejected(limits.message("max_script_bytes", "the script is larger than the limit"), 1, 1)


def _too_deep(limits: Limits) -> str:
    return limits.message("max_depth", "the script nests too deeply")


def parse_script(source: str, origin: str = "<inline>", limits: Limits | None = None, validate: bool = True) -> Program:
    """Parse and validate ``source``; raise ScriptRejected with line and column on refusal.

    ``validate=False`` (``--trust``: CPython runs the script) skips the allow-list and
    refuses only what Python can't parse.
    """
    limits = limits or Limits()
    check_script_size(len(source.encode("utf-8", "surrogatepass")), limits)
    if source.startswith("\ufeff"):
        source = source[1:]
    source = source.replace("\r\n", "\n").replace("\r", "\n")
    if "\x00" in source:
        line = source[: source.index("\x00")].count("\n") + 1
        raise ScriptRejected("the script contains a NUL byte", line, 1)
    try:
        tree = ast.parse(source, filename=origin)
    except SyntaxError as exc:
        raise ScriptRejected(f"syntax error: {exc.msg}", exc.lineno or 1, exc.offset or 1) from None
    except (RecursionError, MemoryError, ValueError) as exc:
        raise ScriptRejected(f"the script can't be parsed: {type(exc).__name__}", 1, 1) from None
    try:
        if validate:
            _Validator(limits, _script_attributes(tree), _placeholder_names(tree), tree).visit(tree)
            _check_scopes(source, origin, tree)
    except RecursionError:
        raise ScriptRejected(_too_deep(limits), 1, 1) from None
    lines = source.split("\n")
    comments = _comments(lines)
    title, after = _title(comments)
    narration = {n: c for n, c in comments.items() if n >= after}
    return Program(
        tree=tree,
        source=source,
        lines=lines,
        origin=origin,
        comments=narration,
        title=title,
        expects=_expects(source) if "expect" in source else {},
    )


EXPECT = re.compile(r"#\s*expect:\s*([A-Za-z_][A-Za-z0-9_]*)\s*$")
"""A trailing ``# expect: RuntimeError`` comment: the line's error is the expected outcome."""


def _expects(source: str) -> dict[int, str]:
    """Line -> exception class name, for every trailing ``# expect: NAME`` comment."""
    out: dict[int, str] = {}
    code_on: set[int] = set()  # lines holding code before a comment
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT:
                match = EXPECT.match(tok.string)
                if match and tok.start[0] in code_on:
                    out[tok.start[0]] = match.group(1)
            elif tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
                code_on.update(range(tok.start[0], tok.end[0] + 1))
    except (tokenize.TokenError, SyntaxError):  # pragma: no cover - ast.parse accepted the source
        return out
    return out


def _comments(lines: list[str]) -> dict[int, str]:
    """Line number -> text of whole-line comments (for narration)."""
    out: dict[int, str] = {}
    for i, line in enumerate(lines, start=1):
        s = line.strip()
        if s.startswith("#") and not s.startswith("#!"):
            out[i] = s[1:].strip()
    return out


def _title(comments: dict[int, str]) -> tuple[str, int]:
    """The comment block that opens the script (its title) and the line after it."""
    parts: list[str] = []
    n = 1
    while n in comments:
        parts.append(comments[n])
        n += 1
    return " ".join(p for p in parts if p), n
