"""Where a step is, in words, for step headers.

For example ``iteration 7/50 · inside no_grad · in forward() called from line 23``.
"""

from __future__ import annotations

from tcopy_cli.trace.records import LoopContext, Step


def turn(loop: LoopContext) -> str:
    """``7/50``, or ``7`` when the loop's length is not known."""
    return f"{loop.iteration}/{loop.total}" if loop.total is not None else str(loop.iteration)


def iteration_text(loops: tuple[LoopContext, ...]) -> str:
    """``iteration 7/50``; nested loops outermost first: ``iteration 7/50 › 2/3``."""
    return "iteration " + " › ".join(turn(loop) for loop in loops) if loops else ""


def call_text(step: Step, brief: bool = False) -> str:
    """``in forward() called from line 23``, innermost call first (``brief``: ``in forward()``)."""
    if step.calls:
        return ", ".join(
            f"in {c.function}()" + ("" if brief else f" called from line {c.line}") for c in reversed(step.calls)
        )
    return f"in {step.function} (depth {step.depth})" if step.function else ""


def where_parts(step: Step, brief: bool = False) -> list[str]:
    """The pieces of a step header after its line number (empty ones left out; ``brief``: the calls
    without the lines they were called from)."""
    inside = "inside " + " › ".join(step.contexts) if step.contexts else ""
    return [p for p in (iteration_text(step.loops), inside, call_text(step, brief)) if p]
