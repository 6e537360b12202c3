"""Drawing steps as a command line does, for tests: through folding into one or more renderers."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tcopy_cli.render import Renderer, ViewOptions
from tcopy_cli.render.folding import StepFlow
from tcopy_cli.trace.records import RunInfo, RunSummary, Step


def draw(
    renderers: list[Renderer], view: ViewOptions, info: RunInfo, steps: Iterable[Step], summary: RunSummary
) -> None:
    """``info``, then each step, folded as the views fold them, then ``summary``, into every renderer."""
    flows = [StepFlow(view, fold=True, carry_notes=True) for _ in renderers]
    for renderer in renderers:
        renderer.start(info)
    for step in steps:
        for renderer, flow in zip(renderers, flows):
            for event in flow.feed(step):
                _event(renderer, event)
    for renderer, flow in zip(renderers, flows):
        for event in flow.close(summary):
            _event(renderer, event)
        renderer.end(summary, flow)


def _event(renderer: Renderer, event: Any) -> None:
    if hasattr(event, "step"):
        renderer.step(event.step, event.shown)
    elif hasattr(event, "summary"):
        renderer.loop(event.summary)
    else:
        renderer.folded(event)
