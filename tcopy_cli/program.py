"""The parsed script both sides share: its AST, lines, narration comments, title and expectations.

Parsing is pure Python (no torch): the command line parses a script once to refuse what
Python can't parse before a worker starts, and the worker parses the same text to run it.
Nothing is validated beyond Python's own grammar: CPython runs the script as written.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass, field

from tcopy_cli.errors import ScriptRejected
from tcopy_cli.limits import Limits

BLOCKS = (ast.For, ast.While, ast.With, ast.If, ast.Try)
"""Blocks whose comments narrate their first step (and a method's ``def`` inside a class)."""

EXPECT = re.compile(r"#\s*expect:\s*([A-Za-z_][A-Za-z0-9_]*)\s*$")
"""A trailing ``# expect: RuntimeError`` comment: the line's error is the expected outcome."""


@dataclass(frozen=True)
class Program:
    """A parsed script: its module AST, source lines and where it came from."""

    tree: ast.Module
    source: str
    lines: list[str]
    origin: str
    comments: dict[int, str] = field(default_factory=dict)
    title: str = ""
    expects: dict[int, str] = field(default_factory=dict)
    """Line -> the exception class a trailing ``# expect: NAME`` comment names there."""

    @property
    def heading(self) -> str:
        """The title as the table and Markdown views show it: a bare ``#`` line of the opening block
        kept as one empty line, a break between paragraphs (``title``, as JSON has it, leaves it out)."""
        lines = "\n".join(_opening(_comments(self.lines))).strip("\n").split("\n")
        return "\n".join(line for i, line in enumerate(lines) if line or lines[i - 1])

    def expectation(self, node: ast.stmt) -> str | None:
        """The exception class the statement is marked to raise (``# expect: NAME``), if any.

        The comment may end any line of a simple statement; for a block statement
        (``for``, ``if`` ...) only the lines of its header count.
        """
        if not self.expects:
            return None
        body = getattr(node, "body", None)
        last = max(node.lineno, body[0].lineno - 1) if body else node.end_lineno or node.lineno
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
        if isinstance(node, (*BLOCKS, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return header_source(self.lines, node)
        seg = ast.get_source_segment(self.source, node)
        return seg if seg is not None else self.lines[node.lineno - 1].strip()

    def narration(self, node: ast.stmt) -> list[str]:
        """Whole-line comments directly above a statement."""
        lines: list[str] = []
        n = node.lineno - 1
        while n >= 1 and n in self.comments:
            lines.append(self.comments[n])
            n -= 1
        return list(reversed(lines))

    def shifted(self, offset: int) -> Program:
        """The same program with every line number ``offset`` lines later (a REPL entry after
        earlier ones, so steps read like one script)."""
        if not offset:
            return self
        ast.increment_lineno(self.tree, offset)
        return Program(
            tree=self.tree,
            lines=[""] * offset + self.lines,
            source="\n" * offset + self.source,
            origin=self.origin,
            comments={n + offset: c for n, c in self.comments.items()},
            title=self.title,
            expects={n + offset: c for n, c in self.expects.items()},
        )


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


def check_script_size(size: int, limits: Limits) -> None:
    """Refuse a script of ``size`` bytes if it is over --max-script-bytes (before it is parsed)."""
    if size > limits.max_script_bytes:
        raise ScriptRejected(limits.message("max_script_bytes", "the script is larger than the limit"), 1, 1)


def script_text(source: str) -> str:
    """The script as it is parsed: no byte-order mark, every line ending a newline."""
    return source.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


def parse_program(source: str, origin: str = "<inline>", limits: Limits | None = None) -> Program:
    """Parse ``source``; raise ScriptRejected (with line and column) for what Python can't parse."""
    limits = limits or Limits()
    check_script_size(len(source.encode("utf-8", "surrogatepass")), limits)
    source = script_text(source)
    if "\x00" in source:
        line = source[: source.index("\x00")].count("\n") + 1
        raise ScriptRejected("the script contains a NUL byte", line, 1)
    try:
        tree = ast.parse(source, filename=origin)
    except SyntaxError as exc:
        raise ScriptRejected(f"syntax error: {exc.msg}", exc.lineno or 1, exc.offset or 1) from None
    except (RecursionError, MemoryError, ValueError) as exc:
        raise ScriptRejected(f"the script can't be parsed: {type(exc).__name__}", 1, 1) from None
    try:  # what only the compiler refuses (``nonlocal`` at module level, ``return`` outside a function)
        compile(tree, origin, "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise ScriptRejected(f"syntax error: {exc.msg}", exc.lineno or 1, exc.offset or 1) from None
    except (RecursionError, MemoryError, ValueError) as exc:
        raise ScriptRejected(f"the script can't be compiled: {type(exc).__name__}", 1, 1) from None
    lines = source.split("\n")
    comments = _comments(lines)
    title, after = _title(comments)
    return Program(
        tree=tree,
        source=source,
        lines=lines,
        origin=origin,
        comments={n: c for n, c in comments.items() if n >= after},
        title=title,
        expects=_expects(source) if "expect" in source else {},
    )


def lead_comments(program: Program) -> dict[int, list[tuple[int, list[str]]]]:
    """For the first statement of each commented block, the block's comments:
    ``id(statement) -> [(id(block), lines)]``, outermost block first."""
    found: dict[int, list[tuple[int, int, list[str]]]] = {}
    for node in ast.walk(program.tree):
        blocks: list[ast.stmt] = [node] if isinstance(node, BLOCKS) else []
        if isinstance(node, ast.ClassDef):
            blocks = [m for m in node.body if isinstance(m, ast.FunctionDef)]
        for block in blocks:
            comments = program.narration(block)
            first = _first_statement(getattr(block, "body", []))
            if comments and first is not None:
                found.setdefault(id(first), []).append((block.lineno, id(block), comments))
    return {k: [(b, lines) for _, b, lines in sorted(v, key=lambda e: e[0])] for k, v in found.items()}


def _first_statement(body: list[ast.stmt]) -> ast.stmt | None:
    """The first statement that is a step of its own (descending into nested blocks)."""
    stmt = body[0] if body else None
    while isinstance(stmt, BLOCKS):
        stmt = stmt.body[0] if stmt.body else None
    return stmt


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


def _opening(comments: dict[int, str]) -> list[str]:
    """The comment block that opens the script, line by line as written (a bare ``#`` as "")."""
    parts: list[str] = []
    while len(parts) + 1 in comments:
        parts.append(comments[len(parts) + 1])
    return parts


def _title(comments: dict[int, str]) -> tuple[str, int]:
    """The comment block that opens the script (its title), line by line as written (a block of
    source, about and notes lines reads as those lines, not one paragraph), and the line after it."""
    parts = _opening(comments)
    return "\n".join(p for p in parts if p), len(parts) + 1
