"""parse.py's allow-list and the interpreter's dispatch table name exactly the same nodes."""

from __future__ import annotations

import ast

from tcopy_cli.script import expressions, parse
from tcopy_cli.script.guards import BINARY_OPERATORS
from tcopy_cli.script.interp import BLOCK_STATEMENTS, NODE_HANDLERS, PART_NODES


def _concrete(base: type) -> set[type]:
    return {t for t in vars(ast).values() if isinstance(t, type) and issubclass(t, base) and t is not base}


def test_parse_allows_exactly_the_nodes_the_interpreter_handles() -> None:
    allowed = set(parse._STMT_NODES) | set(parse._EXPR_NODES)
    handled = set(NODE_HANDLERS) | PART_NODES
    assert allowed - handled == set(), "allowed by parse.py but no handler"
    assert handled - allowed == set(), "a handler parse.py never lets through"


def test_handled_nodes_are_statements_or_expressions_and_parts_have_no_handler() -> None:
    assert all(issubclass(t, (ast.stmt, ast.expr)) for t in NODE_HANDLERS)
    assert not PART_NODES & set(NODE_HANDLERS)
    assert set(NODE_HANDLERS) >= BLOCK_STATEMENTS


def test_every_operator_has_an_entry() -> None:
    # PART_NODES lists the abstract operator classes; each concrete one needs a table entry.
    assert set(BINARY_OPERATORS) == _concrete(ast.operator)
    assert set(expressions.UNARY_OPERATORS) == _concrete(ast.unaryop)
    assert set(expressions.COMPARISONS) == _concrete(ast.cmpop)
    assert _concrete(ast.boolop) == {ast.And, ast.Or}


def test_refused_nodes_have_no_handler() -> None:
    assert not set(parse._REFUSED_WHY) & (set(NODE_HANDLERS) | PART_NODES)
