"""breakpoint() and pdb.set_trace() run as no-ops, with a note saying how to step instead."""

from __future__ import annotations

from tcopy_cli.pipeline import run_source


def _kinds(src: str) -> list[list[str]]:
    trace = run_source(src)
    assert trace.summary is not None and trace.summary.status == "ok"
    return [[n.kind for n in s.explanations] for s in trace.steps]


def test_breakpoint_and_set_trace_get_the_note() -> None:
    kinds = _kinds("import pdb\nx = 1\npdb.set_trace()\nbreakpoint()\nprint('breakpoint()')")
    assert ["debugger.no-op" in k for k in kinds] == [False, False, True, True, False]


def test_the_note_points_at_pause() -> None:
    trace = run_source("breakpoint()")
    (text,) = [n.text for n in trace.steps[0].explanations]
    assert "--pause" in text
