"""A step frame the worker holds goes out with the next statement's ``running`` frame, in one write to
the parent; nothing is ever left held once a statement may run for long."""

from __future__ import annotations

import io
import json
import sys
import textwrap
import types

import pytest

from tcopy_cli.engine.stepper import RunOptions
from tcopy_cli.limits import Limits
from tcopy_cli.program import parse_program
from tcopy_cli.trace import records
from tcopy_cli.worker import Channel, _worker_runner


class Pipe(io.BytesIO):
    """The parent's end as the worker writes it: what was flushed, frame by frame."""

    def __init__(self) -> None:
        super().__init__()
        self.delivered: list[list[str]] = []  # the kinds of the frames each flush delivered
        self._sent = 0

    def flush(self) -> None:
        data = self.getvalue()[self._sent :]
        self._sent += len(data)
        self.delivered.append([json.loads(line)["kind"] for line in data.splitlines()])

    def pending(self) -> bytes:
        return self.getvalue()[self._sent :]


def _step(line: int) -> records.Step:
    return records.Step(1, line, "x = 1", "ok", None, "", [], {}, {})


def test_a_held_step_goes_out_with_the_next_running_frame() -> None:
    pipe = Pipe()
    channel = Channel(pipe)
    channel.running(1, 0, 1, 5)
    channel.step(_step(1), held=True)
    assert pipe.pending()  # written, not yet flushed
    channel.running(2, 0, 2, 5)
    assert pipe.delivered == [["running"], ["step", "running"]]
    assert not pipe.pending()


def test_a_held_step_goes_out_at_once_where_no_running_frame_is_sent() -> None:
    """A loop's header at its later turns is on the parent's stack already: no frame is sent for it,
    and the step held for it is flushed then (the header's iterator may take long)."""
    pipe = Pipe()
    channel = Channel(pipe)
    channel.running(1, 0, 3, 5)  # for ...:
    channel.running(2, 4, 2, 9)  # the body
    channel.step(_step(2), held=True)
    channel.running(1, 0, 3, 5)  # the header again: on top of the stack now
    assert pipe.delivered[-1] == ["step"]
    assert not pipe.pending()


def test_a_loop_sends_each_body_step_with_the_next_statement() -> None:
    src = textwrap.dedent(
        """\
        import torch
        a = torch.zeros(3)
        for _ in range(3):
            a.add_(1)
            b = a * 2
        c = 1
        """
    )
    pipe = Pipe()
    channel = Channel(pipe)
    program = parse_program(src, "<test>")
    _worker_runner(program, RunOptions(), channel, None).run()
    assert not pipe.pending()  # nothing left held
    frames = [kind for flush in pipe.delivered for kind in flush]
    assert frames.count("step") == 9
    # `a.add_(1)`'s step goes with `b = ...`'s running frame; `b = ...`'s with nothing (the header
    # is on the parent's stack) at each turn but the last
    assert ["step", "running"] in pipe.delivered
    assert len(pipe.delivered) < len(frames)


def test_a_step_held_when_the_run_stops_goes_out_before_the_script_unwinds(monkeypatch: pytest.MonkeyPatch) -> None:
    """A limit stops the run right after the step that broke it (held for the next statement, which
    never starts): the script's ``finally`` then runs, and may end the process (``os._exit``) or take
    long. The step must have reached the parent by then."""
    pipe = Pipe()
    seen: list[list[str]] = []
    probe = types.ModuleType("tcopy_test_probe")
    probe.seen = lambda: seen.append([json.loads(line)["kind"] for line in pipe.pending().splitlines()])  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tcopy_test_probe", probe)
    src = textwrap.dedent(
        """\
        import torch
        import tcopy_test_probe
        try:
            x = torch.zeros(1000)
            y = 1
        finally:
            tcopy_test_probe.seen()
        """
    )
    program = parse_program(src, "<test>")
    _worker_runner(program, RunOptions(limits=Limits(max_bytes=1000)), Channel(pipe), None).run()
    assert seen == [[]]  # nothing written and left unflushed as the finally ran
    last = pipe.getvalue().splitlines()[-1]
    assert json.loads(last)["kind"] == "step" and b'"LimitExceeded"' in last
