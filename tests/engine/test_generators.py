"""A loop inside a generator keeps counting its turns across ``yield``.

CPython traces a ``yield`` as a return and going on after it as a call. Dive into Deep
Learning's linear regression from scratch reads its batches from a generator
(``for X, y in data_iter(...)`` with a ``for i in range(...): ... yield`` inside): each batch
is the next turn of the generator's loop, and the loop ends once, when the generator has
given its last batch.
"""

from __future__ import annotations

from typing import Any

from tcopy_cli.limits import Limits
from tcopy_cli.pipeline import run_source
from tcopy_cli.render.loops import LoopSummary, LoopTracker
from tcopy_cli.trace.records import Step

SCRIPT = """\
import torch
def batches(data, size):
    n = len(data)
    for i in range(0, n, size):
        chunk = data[i:i + size]
        yield chunk
data = torch.arange(10.0)
total = torch.zeros(1)
for epoch in range(2):
    for chunk in batches(data, 3):
        total += chunk.sum()
"""


def _python() -> tuple[list[float], float]:
    """Plain python: the chunks' sums in the order the generator gave them, and the total."""
    import torch

    def batches(data: Any, size: int) -> Any:
        for i in range(0, len(data), size):
            yield data[i : i + size]

    data = torch.arange(10.0)
    total = torch.zeros(1)
    sums = []
    for _ in range(2):
        for chunk in batches(data, 3):
            sums.append(float(chunk.sum()))
            total += chunk.sum()
    return sums, float(total)


def _run() -> list[Step]:
    trace = run_source(SCRIPT, limits=Limits(max_steps=1000))
    assert trace.summary is not None and trace.summary.errors == 0
    return trace.steps


def test_each_item_is_the_next_turn_of_the_generators_loop() -> None:
    sums, total = _python()
    steps = _run()
    made = [s for s in steps if s.line == 5]  # chunk = data[i:i + size], in the generator
    assert len(made) == len(sums) == 8
    for k, step in enumerate(made):
        *outer, loop = step.loops
        assert (loop.line, loop.total, loop.suspends) == (4, 4, True)
        # the turn is the item's number within its generator (four items, then a new generator)
        assert loop.iteration == k % 4 + 1
        assert outer[0].line == 9 and outer[0].iteration == k // 4 + 1
        assert sum(step.tensors["batches:chunk"].values) == sums[k]
    # one entry into the generator's loop per generator: its turns are not entries of their own
    assert len({s.loops[-1].entry for s in made}) == 2
    assert steps[-1].tensors["total"].values == [total]


def test_the_generators_loop_ends_once_per_generator() -> None:
    _, ended = _loops(SCRIPT)
    of_generator = [s for s in ended if s.line == 4]
    assert [s.iterations for s in of_generator] == [4, 4]
    # in each epoch, the loop that asked for items (it ran out of them), then the generator's loop
    # (both inside the epoch's turn), and the epoch loop last
    assert [s.line for s in ended] == [10, 4, 10, 4, 9]
    assert ended[-1].iterations == 2


def test_a_generator_left_early_ends_its_loop_at_the_turn_it_reached() -> None:
    script = """\
import torch
def count(n):
    for i in range(n):
        x = torch.tensor(float(i))
        yield x
for rep in range(2):
    for x in count(5):
        if x > 1:
            break
y = torch.ones(1)
"""
    steps, ended = _loops(script)
    assert [(s.line, s.iterations) for s in ended if s.line == 3] == [(3, 3), (3, 3)]
    made = [s.loops[-1].iteration for s in steps if s.line == 4]
    assert made == [1, 2, 3, 1, 2, 3]


def _loops(script: str) -> tuple[list[Step], list[LoopSummary]]:
    trace = run_source(script, limits=Limits(max_steps=5000))
    tracker = LoopTracker()
    ended: list[LoopSummary] = []
    for step in trace.steps:
        ended += tracker.feed(step)
    ended += tracker.close()
    return trace.steps, ended


def test_a_generator_asked_from_another_loop_is_one_run_of_its_loop() -> None:
    # next(g) in each turn of a loop, after another statement: one run of the generator's loop,
    # three turns so far, still waiting when the script ends
    steps, ended = _loops(
        """\
import torch
def gen():
    x = torch.zeros(1)
    for i in range(6):
        x = x + 1
        yield x
g = gen()
for k in range(3):
    a = torch.ones(1) * k
    v = next(g)
done = torch.ones(1)
"""
    )
    assert [s.loops[-1].iteration for s in steps if s.line == 5] == [1, 2, 3]
    assert [(s.line, s.iterations) for s in ended] == [(8, 3), (4, 3)]
    assert steps[-1].tensors["v"].values == [3.0]


def test_loops_around_the_yield_end_when_the_generator_leaves_them() -> None:
    # for epoch: for batch: yield, inside the generator: the inner loop runs twice, three turns each
    steps, ended = _loops(
        """\
import torch
def batches(data):
    for epoch in range(2):
        for i in range(0, 6, 2):
            xb = data[i:i + 2]
            yield xb
data = torch.arange(6.0)
total = torch.zeros(1)
for xb in batches(data):
    total = total + xb.sum()
print(total)
"""
    )
    # the inner loop's first run ends as the generator's next epoch starts; then, when the generator
    # is done, its second run (innermost first), the consumer's loop and the generator's epochs
    assert [(s.line, s.iterations) for s in ended] == [(4, 3), (4, 3), (9, 6), (3, 2)]
    inner = [s for s in ended if s.line == 4]
    # the first run ends before the generator's next epoch starts; the second when it is done
    assert inner[0].last_step < inner[1].first_step
    assert steps[-1].stdout == f"tensor([{2 * sum(range(6))}.])\n"  # two epochs over 0..5


def test_a_one_line_loop_with_a_yield_reports_each_turn_once() -> None:
    steps, ended = _loops(
        """\
import torch
def gen(n):
    for i in range(n): yield torch.tensor(float(i))
s = torch.zeros(())
for t in gen(3):
    s = s + t
"""
    )
    assert [s.loops[-1].iteration for s in steps if s.line == 3] == [1, 2, 3]
    assert [(s.line, s.iterations) for s in ended] == [(5, 3), (3, 3)]


def test_next_of_an_exhausted_generator_at_top_level_is_that_lines_error() -> None:
    trace = run_source(
        """\
import torch
def gen():
    yield torch.ones(1)
    z = torch.zeros(1)
g = gen()
a = next(g)
b = next(g)
""",
    )
    assert [(s.line, s.status) for s in trace.steps if s.line in (4, 7)] == [(4, "ok"), (7, "error")]
    assert trace.steps[-1].error is not None and trace.steps[-1].error.type == "StopIteration"


def test_many_generators_taken_in_turn_each_keep_their_loop() -> None:
    _, ended = _loops(
        """\
def gen():
    for i in range(3):
        yield i
gens = [gen() for _ in range(101)]
for _ in range(3):
    for g in gens:
        v = next(g)
"""
    )
    assert sorted({(s.line, s.iterations) for s in ended if s.line == 2}) == [(2, 3)]
    assert sum(s.line == 2 for s in ended) == 101


def test_an_end_of_iteration_leaving_a_block_is_the_lines_one_error() -> None:
    # through a with, a try/finally or an except that does not match: still the raising line's error
    for block in ("with torch.no_grad():\n    b = next(g)\n", "try:\n    b = next(g)\nfinally:\n    pass\n"):
        trace = run_source("import torch\ng = iter([])\n" + block)
        errors = [(s.line, s.error.type) for s in trace.steps if s.error is not None]
        assert errors == [(4, "StopIteration")], block
        assert not any(s.line == 4 and s.error is None for s in trace.steps)


def test_an_end_of_iteration_caught_at_top_level_is_told_and_a_for_takes_its_own() -> None:
    trace = run_source(
        """\
import torch
class It:
    def __init__(self):
        self.i = 0
    def __iter__(self):
        return self
    def __next__(self):
        self.i += 1
        if self.i > 2:
            raise StopIteration
        return torch.ones(1) * self.i
for x in It():
    y = x * 2
g = iter([])
try:
    b = next(g)
except StopIteration:
    b = None
""",
    )
    assert all(s.error is None for s in trace.steps)
    (step,) = [s for s in trace.steps if s.line == 16]
    assert step.caught is not None and step.caught.except_line == 17


def test_yield_from_a_generator_that_returns_keeps_the_outer_loop_running() -> None:
    # SEND takes the inner generator's StopIteration (its return value): the outer frame goes on
    steps, ended = _loops(
        """\
def inner(i):
    yield i
    return i * 10
def outer():
    for i in range(3):
        yield (yield from inner(i))
got = []
for v in outer():
    got.append(v)
"""
    )
    assert [(s.line, s.iterations) for s in ended] == [(8, 6), (5, 3)]
    assert steps[-1].loops[-1].iteration == 6


def test_a_generator_on_its_def_line_reports_each_statement_once() -> None:
    trace = run_source(
        """\
import torch
def gen(): yield torch.ones(1); print("between"); yield torch.zeros(1)
g = gen()
a = next(g)
b = next(g)
""",
    )
    assert [s.source for s in trace.steps if s.line == 2 and s.function] == [
        "yield torch.ones(1)",
        'print("between")',
        "yield torch.zeros(1)",
    ]


def test_a_generators_loop_ends_before_the_loop_around_it() -> None:
    # the generator's loop ran inside a turn of the outer loop: it is summed up first
    _, ended = _loops(
        """\
def gen(n):
    for i in range(n):
        yield i
for rep in range(2):
    for v in gen(3):
        w = v
"""
    )
    assert [(s.line, s.iterations) for s in ended] == [(5, 3), (2, 3), (5, 3), (2, 3), (4, 2)]
