"""The parent's account of a worker's run: the frames it accepts, in what order, and what it counts.

A worker may send only the frames of its kind (a run, a REPL session, a comparison), ``start``
first and once, steps numbered 1, 2, 3 ...; the parent counts the steps, errors and expected
errors itself, and the worker's ``end`` frame must agree with that count. A run that would end
"ok" must have reached the script's last top-level statement (``last_statement``, from the
parent's parsed script) or stopped at one that can exit early. Anything else is a ``WireError``.

Nothing here imports torch.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tcopy_cli.printable import printable_record
from tcopy_cli.trace import frames, wire
from tcopy_cli.trace.records import RunInfo, RunSummary, Step

STOPPED_BY = frozenset({None, "timeout", "max_steps", "max_output"})
"""What a worker's ``end`` frame may say stopped the run."""


@dataclass
class WorkerState:
    """What the parent knows of a worker's run: what it received, counted and announced."""

    mode: str = "run"
    """``run``, ``session`` or ``compare``: which frames may come."""
    info: RunInfo | None = None
    summary: RunSummary | None = None
    steps: int = 0
    errors: int = 0
    expected: int = 0
    missing: int = 0
    piece_errors: int = 0
    """Error steps of the session's piece of code now running (its ``done`` frame counts them)."""
    stack: wire.RunningStack = field(default_factory=wire.RunningStack)
    furthest: tuple[int, int] = (0, 0)
    """The furthest (line, column) the worker announced a statement at."""
    max_printed: int = 0
    """The most the script's steps may have printed, all together (``--max-output``; 0: not checked)."""
    printed: int = 0
    latest: tuple[int, int, int, int] = (0, 0, 0, 0)
    """Where the statement the worker announced last is (line, column, end line, end column)."""
    source: str = ""
    """The script as parsed (a crash step quotes its statement; ``_may_exit`` reads it)."""
    last: tuple[int, int] | None = None
    """(line, column) of the script's last top-level statement a run announces (an ``end`` frame is
    checked against it); None: no bound."""
    wire_bytes: int = 0
    stderr: bytearray = field(default_factory=bytearray)
    killed_for: str | None = None
    invalid: str | None = None
    """What was wrong with the frame that stopped the run (``killed_for`` is ``invalid``)."""
    final: dict[str, Any] | None = None
    hook: Any = None
    decoder: frames.FrameDecoder = field(default_factory=frames.FrameDecoder)
    explain: Callable[[Step], Step] | None = None
    """The explain pass the caller gave (the worker sends fact-only steps); None: steps go on as facts."""
    printable: bool = False
    timeout: float = 0.0
    """Seconds each run (``start``) or experiment (``experiment``) may take; 0: no limit."""
    experiment: tuple[str, str] | None = None
    """The experiment ``tcopy compare`` runs now: (expression, which run)."""
    experiments_left: int = 0


_KINDS = {
    "run": frozenset({"start", "running", "step", "end", "hook", "rejected", "usage_error", "run_error"}),
    "session": frozenset({"start", "running", "step", "done", "refused", "hook", "usage_error", "run_error"}),
    "compare": frozenset({"start", "experiment", "compare", "rejected", "usage_error", "run_error"}),
}
"""The frames each kind of worker sends (``internal_error`` too, any time)."""
_AFTER_START = frozenset({"running", "step", "end", "done", "refused", "experiment", "compare", "hook"})


def accept(
    frame: frames.Frame, state: WorkerState, emit: Callable[[Step], None], start: Callable[[RunInfo], None]
) -> bool:
    """Take one decoded frame into ``state``; True where it starts a timed part (the run, an experiment).

    WireError where the frame can't come now: a kind this worker does not send, a frame before
    ``start`` or a second ``start``, a step out of order, an ``end`` that does not match the run.
    """
    kind, data = frame.kind, frame.data
    if kind != "internal_error" and kind not in _KINDS[state.mode]:
        raise frames.WireError(f"a {kind} frame from a {state.mode} worker")
    if (kind in _AFTER_START) != (state.info is not None) and kind in _AFTER_START | {"start"}:
        raise frames.WireError(f"a {kind} frame before the start frame" if kind != "start" else "a second start frame")
    if kind == "running":
        position = (data["line"], data["col"], data["end_line"], data["end_col"])
        state.stack.running(position)
        state.latest = position
        if position[:2] > state.furthest:
            state.furthest = position[:2]
        return False
    if kind == "step":
        _step(data["step"], frame.plain, state, emit)
        return False
    if kind == "start":
        state.info = data["info"]
        start(printable_record(data["info"]) if state.printable else data["info"])
        return True
    if kind == "experiment":
        if state.experiments_left <= 0:
            raise frames.WireError("more experiments than the comparison has")
        state.experiments_left -= 1
        state.experiment = (data["expression"], data["run"])
        return True
    if kind == "hook":
        if state.hook is not None:
            state.hook(data["result"])
        return False
    if kind == "end":
        state.summary = _summary(data["summary"], state)
    elif kind == "done" and data["errors"] != state.piece_errors:
        raise frames.WireError(f"a done frame with {data['errors']} errors (the parent received {state.piece_errors})")
    state.final = {"kind": kind, **data}
    return False


def _step(step: Step, plain: bool, state: WorkerState, emit: Callable[[Step], None]) -> None:
    """A step the worker sent, in order, counted, explained and handed on."""
    if step.index != state.steps + 1:
        raise frames.WireError(f"step {step.index} after step {state.steps}")
    state.stack.finished(step.line)
    state.printed += len(step.stdout)
    if state.max_printed and state.printed > state.max_printed:
        # The worker cuts what a script prints at --max-output: a frame past it was not the worker's.
        raise frames.WireError(f"steps that printed more than --max-output ({state.max_printed:,} characters)")
    state.steps = step.index
    if step.error is not None:
        state.errors += 1
        state.piece_errors += 1
    state.expected += step.expected
    state.missing += step.missed
    explained = state.explain(step) if state.explain is not None else step
    if state.printable and not (plain and _plain_notes(explained)):
        explained = printable_record(explained)
    emit(explained)


def _plain_notes(step: Step) -> bool:
    """Whether the text the explain pass added to a step from a plain frame is plain too."""
    from tcopy_cli.printable import UNPRINTABLE

    texts = [n.text for n in step.explanations]
    if step.error is not None:
        texts.append(step.error.explanation)
    return UNPRINTABLE.search("\n".join(texts)) is None


def _summary(sent: RunSummary, state: WorkerState) -> RunSummary:
    """How the run ended, as the parent counted it; WireError where the worker's ``end`` frame says otherwise."""
    counted = (state.steps, state.errors, state.expected, state.missing)
    if (sent.steps, sent.errors, sent.expected, sent.missing) != counted or sent.rejected:
        raise frames.WireError(
            f"an end frame of {sent.steps} steps, {sent.errors} errors, {sent.expected} expected and {sent.missing} "
            f"missing (the parent received {counted[0]}, {counted[1]}, {counted[2]} and {counted[3]})"
        )
    if sent.stopped_by not in STOPPED_BY:
        raise frames.WireError(f"an end frame stopped by {sent.stopped_by!r:.40}")
    if len(sent.loops_ended) != len(sent.loops_ended_turns):
        raise frames.WireError("an end frame whose ended loops and their turns differ in number")
    # The parent's count (the same as the worker's, checked above); the loops it ended, as it said.
    summary = dataclasses.replace(
        sent, steps=state.steps, errors=state.errors, expected=state.expected, missing=state.missing
    )
    if summary.status == "ok":
        last = state.last
        if last is not None and state.furthest < last and not _may_exit(state.source, state.latest):
            raise frames.WireError(
                f"an end frame before the script's last statement (line {last[0]}) started, in a run without errors"
            )
    return summary


_TRY_STAR: tuple[type, ...] = (ast.TryStar,) if hasattr(ast, "TryStar") else ()
_UNANNOUNCED = (ast.Pass, ast.Break, ast.Continue, ast.Global, ast.Nonlocal)
"""Statements an engine may run without announcing them (the sandbox does; a constant
expression statement, a docstring, compiles to nothing in CPython)."""


def _announced(node: ast.stmt) -> bool:
    """Whether every engine announces ``node`` or a statement inside it, once it is reached."""
    if isinstance(node, _UNANNOUNCED) or (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
        return False
    if isinstance(node, (ast.If, ast.While)) and isinstance(node.test, ast.Constant):
        # CPython compiles no test for a constant: only the branch it takes runs.
        return any(map(_announced, node.body if node.test.value else node.orelse))
    if isinstance(node, (ast.Try, *_TRY_STAR)):
        # Its header is not announced. Statements that are not announced raise nothing: the first
        # of its body that is announced is reached, or else the first of "else", of "finally".
        return any(map(_announced, [*node.body, *node.orelse, *node.finalbody]))  # type: ignore[attr-defined]
    return True


_EXIT = re.compile(r"\b(?:exit|quit|SystemExit)\b")


def _may_exit(source: str, position: tuple[int, int, int, int]) -> bool:
    """Whether the statement at ``position`` (the last one announced) can end the run early with
    ``sys.exit(0)``, ``exit()``, ``quit()`` or ``raise SystemExit`` (read in the parent's own copy of the
    script: a worker can't make a statement say it)."""
    lines = source.split("\n")
    line, _, end_line, _ = position
    if not 1 <= line <= end_line <= len(lines):
        return False
    return any(_EXIT.search(text) for text in lines[line - 1 : end_line])


def last_statement(tree: ast.Module) -> tuple[int, int] | None:
    """(line, column) of the script's last top-level statement that a run announces, if any."""
    for node in reversed(tree.body):
        if _announced(node):
            return node.lineno, node.col_offset
    return None
