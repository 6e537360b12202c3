"""The autograd graph record against torch's next_functions, storage spans against plain
arithmetic, and the shipped examples' catalogue."""

from __future__ import annotations

import torch
from cli_runs import cli

from tcopy_cli import examples
from tcopy_cli.engine import run_source
from tcopy_cli.render.graph import to_dot, to_mermaid, to_text
from tcopy_cli.render.memory import span


def _walk(t: torch.Tensor) -> list[tuple[str, list[str | None]]]:
    """(op, [next ops]) for every node reachable from t, breadth first, as plain torch shows it.

    The walk holds every node object it has seen: torch keeps a node's Python wrapper
    only while something references it, so ids of dropped wrappers get reused.
    """
    out: list[tuple[str, list[str | None]]] = []
    seen: list[object] = []
    queue = [t.grad_fn]
    while queue:
        node = queue.pop(0)
        if any(node is s for s in seen):
            continue
        seen.append(node)
        out.append((type(node).__name__, [type(n).__name__ if n is not None else None for n, _ in node.next_functions]))
        queue.extend(n for n, _ in node.next_functions if n is not None)
    return out


GRAPH_SCRIPT = """\
a = torch.tensor([1.0, 2.0], requires_grad=True)
w = torch.tensor([3.0, 4.0], requires_grad=True)
b = a.clone()
h = (b * w + a).sigmoid()
v = h[1:]
loss = (v * a[0]).sum()
"""


def test_graph_matches_next_functions() -> None:
    trace = run_source(GRAPH_SCRIPT, graph=True)
    graph = trace.steps[-1].graph
    assert graph is not None
    # plain torch, same statements
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    w = torch.tensor([3.0, 4.0], requires_grad=True)
    b = a.clone()
    h = (b * w + a).sigmoid()
    v = h[1:]
    loss = (v * a[0]).sum()
    ours = {n.label: n for n in graph.nodes.values()}
    root = ours[graph.roots["loss"]]
    # breadth-first walk of our record from loss
    walked, seen, queue = [], set(), [root.label]
    while queue:
        label = queue.pop(0)
        if label in seen:
            continue
        seen.add(label)
        node = ours[label]
        walked.append((node.op, [ours[n].op if n is not None else None for n in node.next]))
        queue.extend(n for n in node.next if n is not None)
    assert walked == _walk(loss)
    acc = [n for n in graph.nodes.values() if n.op == "AccumulateGrad"]
    assert sorted(v for n in acc for v in n.variable) == ["a", "w"]
    assert graph.views["v"] == "h"
    for text in (to_dot(graph), to_mermaid(graph), to_text(graph)):
        assert "SigmoidBackward0" in text and "CloneBackward0" in text
    del b, h, v


def test_memory_spans_match_plain_computation() -> None:
    src = "base = torch.arange(12.0)\ngrid = base.view(3, 4)\ncol = grid[:, 1]\ntail = base[8:]\nflip = grid.t()"
    step = run_source(src).steps[-1]
    base = torch.arange(12.0)
    plain = {
        "base": base,
        "grid": base.view(3, 4),
        "col": base.view(3, 4)[:, 1],
        "tail": base[8:],
        "flip": base.view(3, 4).t(),
    }
    for name, t in plain.items():
        start = t.storage_offset() * t.element_size()
        end = start + (sum((s - 1) * st for s, st in zip(t.shape, t.stride())) + 1) * t.element_size()
        got = span(step.tensors[name])
        assert got[:2] == (start, end), name
    assert span(step.tensors["col"])[2] is True and span(step.tensors["tail"])[2] is False
    assert span(step.tensors["flip"])[2] is True  # a transpose covers the span, strided
    _, out, _ = cli("run", "-e", src, "--memory", "--step", "5")
    assert "memory:" in out and "bytes 32–47" in out and "strided" in out  # first and last byte


def test_examples_are_listed_with_titles() -> None:
    names = examples.names()
    for required in (
        "clone",
        "copy_",
        "detach",
        "data",
        "deepcopy",
        "views",
        "inplace_error",
        "accumulate",
        "no_grad",
        "new_tensor",
        "clone_detach_data",
    ):
        assert required in names
    assert all(title for _, title in examples.catalogue())
