"""Where each step is: enclosing loops, grad-mode blocks, the call chain, block narration.

The truth is plain Python: the same loops run with ``exec`` record, for each statement,
the turn they are in; tcopy's steps must carry the same numbers.
"""

from __future__ import annotations

import textwrap

from tcopy_cli.engine import run_source
from tcopy_cli.render.jsonl import step_json
from tcopy_cli.trace import decoders, frames, records, wire
from tcopy_cli.trace.records import CallSite, LoopContext


def _turns_by_python(src: str) -> list[tuple[int, ...]]:
    """Run ``src`` with plain Python, where each ``mark(i, ...)`` call records the loop turns."""
    seen: list[tuple[int, ...]] = []
    exec(src, {"mark": lambda *turns: seen.append(turns)})
    return seen


def test_nested_loops_match_python() -> None:
    body = """\
    for i in range(3):
        for j in [10, 20]:
            mark(i + 1, j // 10)
        k = 0
        while k < 2:
            k += 1
            mark(i + 1, k)
    """
    src = textwrap.dedent(body)
    expected = _turns_by_python(src)
    steps = run_source(src.replace("mark(", "print(")).steps
    printed = [s for s in steps if s.source.startswith("print(")]
    assert [tuple(c.iteration for c in s.loops) for s in printed] == expected
    for s in printed:
        outer = s.loops[0]
        assert (outer.line, outer.total) == (1, 3)
        inner = s.loops[1]
        assert (inner.line, inner.total) == ((2, 2) if "//" in s.source else (5, None))
    # every entry into the inner for loop is a new entry, the outer one stays the same
    entries = {(s.loops[0].entry, s.loops[1].entry) for s in printed}
    assert len({e[0] for e in entries}) == 1
    assert len({e[1] for e in entries}) == 6
    assert [len(s.loops) for s in steps if s.source == "k = 0"] == [1, 1, 1]


def test_loop_in_a_function_called_in_a_loop_and_call_chain() -> None:
    src = textwrap.dedent(
        """\
        def inner(x):
            return x * 2

        def outer(x):
            y = inner(x)
            return y

        for i in range(2):
            z = outer(torch.ones(1))
        """
    )
    steps = run_source(src).steps
    in_inner = [s for s in steps if s.function == "inner"]
    assert len(in_inner) == 2
    for n, s in enumerate(in_inner, 1):
        assert s.calls == (CallSite("outer", 9), CallSite("inner", 5))
        assert s.loops == (LoopContext(8, n, 2, 1),)
    assert all(s.calls == () for s in steps if s.function is None)


def test_grad_mode_contexts() -> None:
    src = textwrap.dedent(
        """\
        a = torch.ones(2, requires_grad=True)
        with torch.no_grad():
            b = a * 2
            with torch.enable_grad():
                c = a * 2
        with torch.inference_mode():
            d = a * 2
        e = a * 2
        """
    )
    contexts = {s.source.split(" ")[0]: s.contexts for s in run_source(src).steps}
    assert contexts == {
        "a": (),
        "b": ("no_grad",),
        "c": ("no_grad", "enable_grad"),
        "d": ("inference_mode",),
        "e": (),
    }


def test_block_comments_narrate_the_first_step_once() -> None:
    src = textwrap.dedent(
        """\
        import torch
        a = torch.ones(2)
        # Loop over three turns
        for i in range(3):
            # the body
            b = a * i
        # Without the graph
        with torch.no_grad():
            c = a + 1
        # A choice
        if True:
            d = a
        """
    )
    steps = run_source(src).steps
    narration = [(s.source, s.narration) for s in steps if s.narration]
    assert narration == [
        ("b = a * i", ["Loop over three turns", "the body"]),
        ("b = a * i", ["the body"]),
        ("b = a * i", ["the body"]),
        ("c = a + 1", ["Without the graph"]),
        ("d = a", ["A choice"]),
    ]


def test_context_travels_on_the_wire() -> None:
    src = "def f(x):\n    return x + 1\nfor i in range(2):\n    with torch.no_grad():\n        y = f(torch.ones(1))\n"
    for step in run_source(src).steps:
        assert decoders.decode_as(records.Step, frames.parse(wire.dumps(step).encode())) == step
    last = run_source(src).steps[-1]
    assert (
        last.loops
        and last.contexts == ("no_grad",)
        and step_json(last)["loops"] == [{"line": 3, "iteration": 2, "total": 2}]
    )


def test_a_last_turn_with_no_step_is_counted_as_python_ran_it() -> None:
    # the turn with i == 2 runs only an if header and break (no step); python ran three turns
    from tcopy_cli.render.loops import LoopTracker

    src = textwrap.dedent(
        """\
        turns = []
        for i in range(10):
            turns.append(i)
            if i == 2:
                break
            x = i
        for j in range(4):
            if j == 1:
                for k in range(3):
                    if k == 1:
                        break
                    y = k
        """
    )
    ns: dict[str, object] = {}
    exec(src, ns)
    assert ns["turns"] == [0, 1, 2]
    trace = run_source(src)
    assert trace.summary is not None
    tracker = LoopTracker()
    ended = []
    for step in trace.steps:
        ended += tracker.feed(step)
    ended += tracker.close(trace.summary)
    # for i: three turns (the third cut by break); for k: two (k == 1 breaks), for j: four
    assert [(s.line, s.iterations) for s in ended] == [(2, 3), (9, 2), (7, 4)]


def test_a_turn_refused_by_max_iterations_is_not_counted() -> None:
    # --max-iterations 4 refuses the fifth turn at its header: four turns ran (the error step
    # sits in turn 4, as an error in a for header does), and x holds what python's four turns make
    import torch

    from tcopy_cli.limits import Limits
    from tcopy_cli.render.loops import LoopTracker

    for head in ("for i in range(50):", "while True:"):
        src = f"x = torch.zeros(1)\n{head}\n    x = x + 1\n"
        ns: dict[str, object] = {"torch": torch, "x": torch.zeros(1)}
        for _ in range(4):
            exec("x = x + 1", ns)
        trace = run_source(src, limits=Limits(max_iterations=4))
        assert trace.summary is not None
        last = trace.steps[-1]
        assert last.error is not None and last.error.type == "LimitExceeded" and last.line == 2
        assert [(c.line, c.iteration) for c in last.loops] == [(2, 4)]
        assert last.tensors["x"].values == ns["x"].tolist() == [4.0]  # type: ignore[attr-defined]
        tracker = LoopTracker()
        ended = []
        for step in trace.steps:
            ended += tracker.feed(step)
        ended += tracker.close(trace.summary)
        assert [(s.line, s.iterations) for s in ended] == [(2, 4)], head
