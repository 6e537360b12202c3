"""Graphs a loop keeps alive: a running total kept in the graph (``total += loss``) and
tensors in the graph collected into a container turn after turn (``losses.append(loss)``),
the leak the PyTorch FAQ calls "accumulating history across your training loop".

Each case is checked against plain torch: the graph link the note states is walked in
python's own graph, and the scripts without it get no note (among them the review's
same-turn rebinding, ``loss = loss / accum``, that never reaches an earlier turn).
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


def _turn_links(src: str, name: str, turns: int) -> list[bool]:
    """For each turn of the script's one loop (run by plain python, the loop body unrolled),
    whether ``name``'s graph at the turn's end reaches its grad_fn at the turn's start."""
    head, body = src.split("for i in range(3):\n")
    ns: dict = {"torch": torch}
    exec(head, ns)
    links = []
    for i in range(turns):
        ns["i"] = i
        start = getattr(ns.get(name), "grad_fn", None)
        exec("\n".join(line[4:] for line in body.splitlines()), ns)
        links.append(start is not None and _reaches(ns[name], start))
    return links


CHAINED = {
    "in place": "total = 0\nfor i in range(3):\n    loss = (w * x).sum()\n    total += loss",
    "rebound": "total = torch.zeros(())\nfor i in range(3):\n    loss = (w * x).sum()\n    total = total + loss",
}


@pytest.mark.parametrize("case", list(CHAINED))
def test_a_running_total_in_the_graph_is_told_from_its_second_turn(case: str) -> None:
    src = LOOP + CHAINED[case]
    assert _turn_links(src, "total", 3) == [False, True, True]
    found = notes(src, "graph.chained")
    assert len(found) == 2, found  # turns 2 and 3, not the first (total had no graph when it began)
    for _, text in found:
        assert text.startswith("total's graph now holds the graph total had when this turn of the loop began")
        assert "For that, add `loss.item()` (a number) or `loss.detach()` instead." in text


def test_a_recurrent_state_is_told_with_detach_at_the_turn() -> None:
    src = (
        "torch.manual_seed(0)\nW = torch.randn(3, 3, requires_grad=True)\nh = torch.zeros(3)\n"
        "for i in range(3):\n    h = torch.tanh(h @ W + i)"
    )
    assert _turn_links(src, "h", 3) == [False, True, True]
    found = notes(src, "graph.chained")
    assert len(found) == 2
    assert "(TanhBackward0 leads back to that TanhBackward0)" in found[0][1]
    assert "backpropagation through time" in found[0][1]
    assert found[0][1].endswith("cut the chain once per turn with `h = h.detach()`.")


NOT_CHAINED = {
    "a number": "total = 0\nfor i in range(3):\n    loss = (w * x).sum()\n    total += loss.item()",
    "detached": "total = torch.zeros(())\nfor i in range(3):\n    total = total + (w * x).sum().detach()",
    "a new graph each turn": "for i in range(3):\n    loss = (w * x).sum()\n    loss.backward()",
    # rebound within the turn: the graph never reaches the turn before (the review's r16)
    "scaled in the turn": "for i in range(3):\n    loss = (w * x).sum()\n    loss = loss / 4\n    loss.backward()",
    "layers in the turn": "for i in range(3):\n    h = w * 2\n    h = h + 1\n    h = h.relu()",
    "not in a loop": "t = (w * x).sum()\nt = t + (w * x).sum()",
    # the turn began before the inner loop, not after it (the second review's s01)
    "after an inner loop": (
        "for i in range(3):\n    loss = (w * i).sum()\n    for j in range(2):\n        k = j + 1\n"
        "    loss = loss / 2\n    loss.backward()"
    ),
    # a graph made before the loop, reached again each turn: nothing chains (s24)
    "a base made before the loop": "base = w * 2\nh = base\nfor i in range(3):\n    h = base + i",
}


@pytest.mark.parametrize("case", list(NOT_CHAINED))
def test_no_chain_no_note(case: str) -> None:
    src = LOOP + NOT_CHAINED[case]
    if "for i in range(3):\n    " in src and "for j" not in src:
        name = "total" if "total" in src else ("loss" if "loss" in src else "h")
        assert not any(_turn_links(src, name, 3)[1:])  # no turn reaches the one before it
    assert notes(src, "graph.chained") == []


def test_a_list_of_losses_is_told_from_the_second_turn_it_grows() -> None:
    src = LOOP + "losses = []\nfor i in range(3):\n    loss = (w * x * i).sum()\n    losses.append(loss)"
    ns: dict = {"torch": torch}
    exec(src, ns)
    assert [t.grad_fn is not None for t in ns["losses"]] == [True, True, True]
    found = notes(src, "graph.collected")
    assert len(found) == 2  # turns 2 and 3: growing in an earlier turn too is what "a graph per turn" rests on
    assert found[0][1].startswith(
        "losses[1] is a tensor in the graph (SumBackward0), and losses gained such tensors in an earlier turn too"
    )
    assert "store `loss.item()` (a number) or `loss.detach()` instead" in found[0][1]
    assert found[1][1].startswith("losses[2] is a tensor")


def test_the_container_that_grows_is_named_not_an_item_of_it() -> None:
    src = LOOP + "pairs = []\nfor i in range(3):\n    loss = (w * i).sum()\n    pairs.append((loss, w * 2))"
    found = notes(src, "graph.collected")
    assert [t.split(" are tensors")[0] for _, t in found] == [
        "pairs[1][0] and pairs[1][1]",
        "pairs[2][0] and pairs[2][1]",
    ]
    assert "and pairs gained such tensors" in found[0][1]


def test_item_is_offered_only_for_one_element() -> None:
    src = LOOP + "preds = []\nfor i in range(3):\n    out = w * i\n    preds.append(out)"
    text = notes(src, "graph.collected")[0][1]
    assert "store `out.detach()` (or `out.tolist()` for plain numbers) instead" in text
    with pytest.raises(RuntimeError):
        (torch.ones(3, requires_grad=True) * 2).item()  # plain torch: .item() needs one element


NOT_COLLECTED = {
    "numbers": "losses = []\nfor i in range(3):\n    losses.append((w * x).sum().item())",
    "detached": "losses = []\nfor i in range(3):\n    losses.append((w * x).sum().detach())",
    "leaves": "ws = []\nfor i in range(3):\n    ws.append(w)",
    "no grad": "ys = []\nfor i in range(3):\n    ys.append(x * i)",
    "a key overwritten": "log = {}\nfor i in range(3):\n    log['loss'] = (w * i).sum()",
    "a tuple rebuilt": "for i in range(3):\n    state = (w * i, x)",
    "a list rebuilt": "for i in range(3):\n    outs = [w * k for k in range(2)]",
    "a list made again, then appended to": "for i in range(3):\n    xs = []\n    xs.append(w * i)",
    "not in a loop": "losses = []\nlosses.append((w * x).sum())\nlosses.append((w * x).sum())",
    # the third review: a cleared list whose new item takes a freed item's object id (t02), and
    # items whose graph was cut in place after they went in (t04)
    "cleared, an id back": (
        "xs = []\nfor i in range(20):\n    xs.clear()\n    c = torch.zeros(1)\n    xs.append(c)\n    xs.append(w * i)"
    ),
    "detached in place": "losses = []\nfor i in range(3):\n    losses.append((w * i).sum())\n    losses[-1].detach_()",
}


@pytest.mark.parametrize("case", list(NOT_COLLECTED))
def test_nothing_kept_turn_after_turn_no_note(case: str) -> None:
    assert notes(LOOP + NOT_COLLECTED[case], "graph.collected") == []


LOCAL = """\
w = torch.ones(3, requires_grad=True)
def train(n):
    losses = []
    h = torch.zeros(3)
    for i in range(n):
        h = torch.tanh(h * w)
        losses.append(h.sum())
    return len(losses)
train(3)
"""


def test_a_functions_own_list_and_state_are_told_with_code_it_can_run() -> None:
    ns: dict = {"torch": torch}
    exec(LOCAL.replace("    return len(losses)", "    return losses, h").replace("train(3)", "out = train(3)"), ns)
    losses, h = ns["out"]
    assert len(losses) == 3 and all(t.grad_fn is not None for t in losses)
    assert type(h.grad_fn).__name__ == "TanhBackward0"
    collected = notes(LOCAL, "graph.collected")
    assert [t.split(" is a tensor")[0] for _, t in collected] == ["train:losses[1]", "train:losses[2]"]
    chained = notes(LOCAL, "graph.chained")
    assert len(chained) == 2 and chained[0][1].startswith("train:h's graph now holds")
    assert chained[0][1].endswith("cut the chain once per turn with `h = h.detach()`.")
