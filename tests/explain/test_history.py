"""Graphs a loop keeps alive: a running total kept in the graph (``total += loss``) and
tensors in the graph collected into a container (``losses.append(loss)``), the leak the
PyTorch FAQ calls "accumulating history across your training loop".

Each case is checked against plain torch: the graph link the note states is walked in
python's own graph, and the scripts without it get no note.
"""

from __future__ import annotations

import pytest
import torch

from tcopy_cli.pipeline import run_source

LOOP = "w = torch.ones(3, requires_grad=True)\nx = torch.tensor([1., 2., 3.])\n"


def notes(src: str, kind: str) -> list[tuple[int, str]]:
    """(step index, text) of every note of ``kind`` in the run."""
    return [(s.index, n.text) for s in run_source(src).steps for n in s.explanations if n.kind == kind]


def _reaches(t: torch.Tensor, node: object) -> bool:
    """Whether ``node`` is behind ``t.grad_fn`` in plain torch's graph."""
    stack, seen = [t.grad_fn], set()
    while stack:
        cur = stack.pop()
        if cur is None or id(cur) in seen:
            continue
        if cur is node:
            return True
        seen.add(id(cur))
        stack.extend(n for n, _ in cur.next_functions)
    return False


CHAINED = {
    "in place": "total = 0\nfor i in range(3):\n    loss = (w * x).sum()\n    total += loss",
    "rebound": "total = torch.zeros(())\nfor i in range(3):\n    loss = (w * x).sum()\n    total = total + loss",
}


@pytest.mark.parametrize("case", list(CHAINED))
def test_a_running_total_in_the_graph_is_told_from_its_second_turn(case: str) -> None:
    src = LOOP + CHAINED[case]
    # plain torch: each turn's total leads back to the total before it
    ns: dict = {"torch": torch}
    exec(LOOP, ns)
    exec("total = 0 if " + repr(case) + " == 'in place' else torch.zeros(())", ns)
    linked = []
    for _ in range(3):
        old = ns["total"].grad_fn if isinstance(ns["total"], torch.Tensor) else None
        loss = (ns["w"] * ns["x"]).sum()
        ns["total"] = ns["total"] + loss
        linked.append(old is not None and _reaches(ns["total"], old))
    assert linked == [False, True, True]
    found = notes(src, "graph.chained")
    assert len(found) == 2, found  # turns 2 and 3, not the first (total had no graph before it)
    for _, text in found:
        assert text.startswith("total's graph now holds its graph from before this step (AddBackward0")
        assert "add `loss.item()` (a number) or `loss.detach()` instead" in text


def test_a_recurrent_state_is_told_without_naming_an_addend() -> None:
    src = (
        "torch.manual_seed(0)\nW = torch.randn(3, 3, requires_grad=True)\nh = torch.zeros(3)\n"
        "for x in torch.randn(3, 3):\n    h = torch.tanh(h @ W + x)"
    )
    found = notes(src, "graph.chained")
    assert len(found) == 2
    assert "TanhBackward0 leads back to the old TanhBackward0" in found[0][1]
    assert "backpropagation through time" in found[0][1] and "`.item()`" in found[0][1]


NOT_CHAINED = {
    "a number": LOOP + "total = 0\nfor i in range(3):\n    loss = (w * x).sum()\n    total += loss.item()",
    "detached": LOOP + "total = torch.zeros(())\nfor i in range(3):\n    total = total + (w * x).sum().detach()",
    "a new graph each turn": LOOP + "for i in range(3):\n    loss = (w * x).sum()\n    loss.backward()",
    "not in a loop": LOOP + "t = (w * x).sum()\nt = t + (w * x).sum()",
}


@pytest.mark.parametrize("case", list(NOT_CHAINED))
def test_no_chain_no_note(case: str) -> None:
    assert notes(NOT_CHAINED[case], "graph.chained") == []


def test_a_list_of_losses_in_the_graph_is_told_where_it_grows() -> None:
    src = LOOP + "losses = []\nfor i in range(3):\n    loss = (w * x * i).sum()\n    losses.append(loss)"
    ns: dict = {"torch": torch}
    exec(src, ns)
    assert [t.grad_fn is not None for t in ns["losses"]] == [True, True, True]
    found = notes(src, "graph.collected")
    assert len(found) == 3  # one per turn: each appended a tensor with a graph
    first = found[0][1]
    assert first.startswith("losses[0] is a tensor in the graph (SumBackward0), so losses keeps its graph alive")
    assert "store `loss.item()` (a number) or `loss.detach()` instead" in first
    assert found[2][1].startswith("losses[2] is a tensor")


def test_a_dict_filled_in_a_loop_is_told_too() -> None:
    src = LOOP + "log = {}\nfor i in range(2):\n    log[i] = (w * i).sum()"
    found = notes(src, "graph.collected")
    assert [t.split(" is a tensor")[0] for _, t in found] == ["log[0]", "log[1]"]
    assert "`.item()`" in found[0][1]


NOT_COLLECTED = {
    "numbers": "losses = []\nfor i in range(3):\n    losses.append((w * x).sum().item())",
    "detached": "losses = []\nfor i in range(3):\n    losses.append((w * x).sum().detach())",
    "leaves": "ws = []\nfor i in range(3):\n    ws.append(w)",
    "no grad": "ys = []\nfor i in range(3):\n    ys.append(x * i)",
    "not in a loop": "losses = []\nlosses.append((w * x).sum())",
}


@pytest.mark.parametrize("case", list(NOT_COLLECTED))
def test_nothing_kept_in_the_graph_no_note(case: str) -> None:
    assert notes(LOOP + NOT_COLLECTED[case], "graph.collected") == []


def test_an_item_replaced_each_turn_is_told_once() -> None:
    """``last[0] = t`` over a ``None``: the first turn gives the list a tensor (tcopy counts the
    tensors a container holds); the later ones replace it, and the list does not grow."""
    src = LOOP + "last = [None]\nfor i in range(3):\n    last[0] = (w * i).sum()"
    assert len(notes(src, "graph.collected")) == 1
