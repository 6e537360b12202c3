"""Which saved attributes of graph nodes the saved-tensor check reads again at each step.

A saved tensor backward freed reads as an error for good, and an attribute that read as a flag
or sizes holds no tensor in any node of its class: neither is read again while only the
record's own code runs. Nodes here are stand-ins counting their reads; the last test uses torch's.
"""

from __future__ import annotations

import collections

import torch

from tcopy_cli.trace.graph import GraphWalk, SavedTensorTracker

FREED = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they "
    "have already been freed). Saved intermediate values of the graph are freed when you call .backward()"
)
reads: collections.Counter[str] = collections.Counter()


class FakeBackward0:
    """A node whose input backward freed, with a stride, an optional tensor (None) and a weight."""

    weight = torch.ones(3)

    @property
    def _saved_self(self) -> torch.Tensor:
        reads["self"] += 1
        raise RuntimeError(FREED)

    @property
    def _saved_stride(self) -> tuple[int, ...]:
        reads["stride"] += 1
        return (1, 1)

    @property
    def _saved_bias(self) -> None:
        reads["bias"] += 1
        return None

    @property
    def _saved_weight(self) -> torch.Tensor:
        reads["weight"] += 1
        return self.weight


def _updates(tracker: SavedTensorTracker, walk: GraphWalk, steps: int) -> list[tuple[list[object], int]]:
    out = []
    for _ in range(steps):
        events, read = tracker.update(walk, {}, lambda _nid: ())
        out.append((list(events), len(read)))
    return out


def test_freed_and_plain_attributes_are_read_once_while_the_record_sees_everything() -> None:
    reads.clear()
    tracker = SavedTensorTracker()
    tracker.unseen = lambda: False
    walk = GraphWalk(nodes={1: FakeBackward0()})
    results = _updates(tracker, walk, 3)
    assert reads == {"self": 1, "stride": 1, "bias": 3, "weight": 3}
    assert results == [([], 1)] * 3  # the weight read at every step, as before
    assert set(tracker.entries) == {(1, "_saved_weight", 0)}


def test_freed_attributes_are_read_again_where_unseen_code_may_have_run() -> None:
    reads.clear()
    tracker = SavedTensorTracker()  # unseen: True unless told
    _updates(tracker, GraphWalk(nodes={1: FakeBackward0()}), 3)
    assert reads["self"] == 3
    assert reads["stride"] == 1  # the attribute's type is the class's, whatever code ran


def test_a_real_graph_after_backward_gives_the_same_events_and_entries() -> None:
    x = torch.randn(2, 1, 6, 6, requires_grad=True)
    conv = torch.nn.Conv2d(1, 2, 3)
    loss = torch.relu(conv(x)).sum()
    loss.backward()
    walk = GraphWalk()
    walk.reach_from(loss)
    seeing, blind = SavedTensorTracker(), SavedTensorTracker()
    seeing.unseen = lambda: False
    for _ in range(3):
        assert seeing.update(walk, {}, lambda _nid: ())[0] == blind.update(walk, {}, lambda _nid: ())[0]
        assert seeing.entries.keys() == blind.entries.keys()
    assert seeing._freed  # the freed inputs were noted
