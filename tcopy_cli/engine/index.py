"""Where each statement of the script is: which statement a line (and column) belongs to, the
blocks around it, and the ``try`` clauses that would see an error raised there.

Built once per program from its AST; the tracer asks it at every line event.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from types import CodeType

HEADERS = (
    ast.If,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.With,
    ast.AsyncWith,
    ast.Try,
    ast.Break,
    ast.Continue,
    ast.Pass,
    ast.Global,
    ast.Nonlocal,
    *((ast.Match,) if hasattr(ast, "Match") else ()),
)
"""Statements that are not a step unless they fail or print (their bodies' statements are; ``global`` is a
declaration)."""
LOOPS = (ast.For, ast.AsyncFor, ast.While)
WITHS = (ast.With, ast.AsyncWith)
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass
class TryBlock:
    """A ``try`` body's lines, in the code object of ``owner``, and its ``except`` clauses."""

    owner: ast.AST | None
    first: int
    last: int
    depth: int
    handlers: list[tuple[ast.expr | None, int]]


class StatementIndex:
    """Which statement a line belongs to, and which ``try`` blocks enclose a line."""

    def __init__(self, tree: ast.Module) -> None:
        self.at_line: dict[int, ast.stmt] = {}
        self.headers: set[int] = set()
        self.tries: list[TryBlock] = []
        self.functions: dict[tuple[int, str], ast.AST] = {}
        self.owners: dict[int, ast.AST | None] = {}
        self.spans: dict[int, list[ast.stmt]] = {}
        self.loops: dict[int, tuple[ast.stmt, ...]] = {}
        """The loops whose body holds a statement (in its own function), outermost first."""
        self.withs: dict[int, tuple[ast.stmt, ...]] = {}
        """The ``with`` blocks whose body holds a statement (in its own function), outermost first."""
        self._all: list[ast.stmt] = []
        self._add_block(tree.body, None, 0)
        starts: dict[int, int] = {}
        for stmt in self._all:
            starts[stmt.lineno] = starts.get(stmt.lineno, 0) + 1
        # Lines where statements share a line (``a = 1; b = 2``, ``for i in x: y(i)``): a
        # line event can't tell them apart, the column of the running instruction can.
        self.shared = frozenset(line for line, n in starts.items() if n > 1)
        for stmt in self._all:
            for line in range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1):
                if line in self.shared:
                    self.spans.setdefault(line, []).append(stmt)

    def _add_block(
        self,
        body: list[ast.stmt],
        owner: ast.AST | None,
        depth: int,
        loops: tuple[ast.stmt, ...] = (),
        withs: tuple[ast.stmt, ...] = (),
    ) -> None:
        for stmt in body:
            self._add(stmt, owner, depth, loops, withs)

    def _add(
        self,
        stmt: ast.stmt,
        owner: ast.AST | None,
        depth: int,
        loops: tuple[ast.stmt, ...],
        withs: tuple[ast.stmt, ...],
    ) -> None:
        self._all.append(stmt)
        self.owners[id(stmt)] = owner
        self.loops[id(stmt)] = loops
        self.withs[id(stmt)] = withs
        first = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])])
        last = stmt.end_lineno or stmt.lineno
        for line in range(first, last + 1):
            self.at_line[line] = stmt  # the statements inside overwrite their own lines
        if isinstance(stmt, FUNCTIONS):
            self.functions[(first, stmt.name)] = stmt
            self._add_block(stmt.body, stmt, 0)
            return
        if isinstance(stmt, ast.ClassDef):
            self._add_block(stmt.body, stmt, 0)
            return
        if isinstance(stmt, HEADERS) or hasattr(stmt, "body"):
            self.headers.add(id(stmt))
        if isinstance(stmt, ast.Try) and stmt.body:
            handlers = [(h.type, h.lineno) for h in stmt.handlers]
            self.tries.append(TryBlock(owner, stmt.body[0].lineno, _end(stmt.body), depth, handlers))
        # Only a loop's body is inside it (its ``else`` runs after the last turn), and only a
        # ``with``'s body inside its context.
        inner_loops = (*loops, stmt) if isinstance(stmt, LOOPS) else loops
        inner_withs = (*withs, stmt) if isinstance(stmt, WITHS) else withs
        self._add_block(getattr(stmt, "body", []), owner, depth + 1, inner_loops, inner_withs)
        for name in ("orelse", "finalbody"):
            self._add_block(getattr(stmt, name, []), owner, depth + 1, loops, withs)
        for handler in getattr(stmt, "handlers", []):
            self._add_block(handler.body, owner, depth + 1, loops, withs)
        for case in getattr(stmt, "cases", []):  # match
            self._add_block(case.body, owner, depth + 1, loops, withs)

    def statement(self, line: int, col: int | None = None) -> ast.stmt | None:
        """The innermost statement at ``line`` (and ``col``, where statements share the line)."""
        if col is not None and line in self.shared:
            around = [
                stmt
                for stmt in self.spans[line]
                if (stmt.lineno, stmt.col_offset) <= (line, col)
                and (line, col) < (stmt.end_lineno or stmt.lineno, stmt.end_col_offset or 0)
            ]
            if around:
                return max(around, key=lambda stmt: (stmt.lineno, stmt.col_offset))
        return self.at_line.get(line)

    def is_header(self, node: ast.stmt) -> bool:
        """True for a block statement (not a step unless it fails or prints)."""
        return id(node) in self.headers

    def owner(self, code: CodeType) -> ast.AST | None:
        """The ``def`` whose body ``code`` runs (None for module code)."""
        return self.functions.get((code.co_firstlineno, code.co_name))

    def handlers(self, owner: ast.AST | None, line: int) -> Iterator[tuple[ast.expr | None, int]]:
        """The ``except`` clauses that would see an error raised at ``line``, innermost first."""
        around = [t for t in self.tries if t.owner is owner and t.first <= line <= t.last]
        for block in sorted(around, key=lambda t: -t.depth):
            yield from block.handlers


def _end(body: list[ast.stmt]) -> int:
    last = body[-1]
    return last.end_lineno or last.lineno
