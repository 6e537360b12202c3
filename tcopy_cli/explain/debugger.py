"""A note for ``breakpoint()`` and ``pdb.set_trace()``, which tcopy runs as no-ops."""

from __future__ import annotations

import ast

from tcopy_cli.explain.facts import StepFacts, note
from tcopy_cli.trace.records import Note


def _stops_in_debugger(source: str) -> bool:
    try:
        tree = ast.parse(source.strip())
    except SyntaxError:
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if (isinstance(func, ast.Name) and func.id == "breakpoint") or (
                isinstance(func, ast.Attribute) and func.attr == "set_trace"
            ):
                return True
    return False


def debugger_calls(f: StepFacts) -> list[Note]:
    """``breakpoint()``/``pdb.set_trace()`` did nothing: tcopy shows every step already."""
    step = f.step
    if step.status != "ok" or ("set_trace" not in step.source and "breakpoint" not in step.source):
        return []
    if not _stops_in_debugger(step.source):
        return []
    return [
        note(
            "debugger.no-op",
            "tcopy does not start a debugger here: it already stops after every statement and shows "
            "each tensor; run with --pause to step through the script interactively.",
        )
    ]
