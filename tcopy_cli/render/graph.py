"""The autograd graph: a Rich tree for the terminal, and DOT / Mermaid / text for docs.

Nodes and edges come from the step's GraphRecord, which lists each node's
``next_functions`` in order, so what is drawn is exactly torch's graph.

A loop builds the same nodes turn after turn (``total = total + loss`` chains every turn's
graph): the text and the tree draw the first of three or more alike nodes (``alike``) and
name the others after it, as a run folds a loop's later turns. DOT and Mermaid keep every node.
"""

from __future__ import annotations

from rich.text import Text
from rich.tree import Tree

from tcopy_cli.trace.records import GraphNode, GraphRecord

MAX_DEPTH = 25
FOLD_ALIKE = 3
"""Nodes alike in this number or more are drawn once."""


def alike(graph: GraphRecord) -> dict[str, str]:
    """Each node that is like an earlier one (``FOLD_ALIKE`` or more alike), by its label: the first
    of them. Alike: the same class, leaf, names and saved tensors, and next functions alike in turn,
    where one of the same class (a loop's chain: total's AddBackward0 to the last turn's) counts as
    alike whatever follows it."""
    shape: dict[str, object] = {}
    for top in graph.nodes:  # children before parents, without recursion (a chain may be long)
        stack = [top]
        while stack:
            label = stack[-1]
            node = graph.nodes[label]
            todo = [n for n in node.next if n is not None and n not in shape and graph.nodes[n].op != node.op]
            if label in shape or not todo:
                stack.pop()
                if label not in shape:
                    saved = tuple((s.attr, s.stale) for s in node.saved)
                    nexts = tuple(
                        None if n is None else "↻" if graph.nodes[n].op == node.op else shape[n] for n in node.next
                    )
                    shape[label] = (node.op, tuple(node.variable), tuple(node.tensors), saved, nexts)
            else:
                stack.extend(todo)
    groups: dict[object, list[str]] = {}
    for label in graph.nodes:
        groups.setdefault(shape[label], []).append(label)
    return {label: same[0] for same in groups.values() if len(same) >= FOLD_ALIKE for label in same[1:]}


def node_label(node: GraphNode) -> Text:
    """``MulBackward0 [y]  saved: self (a, v0)``; ``AccumulateGrad → a``."""
    text = Text(node.op, style="bold magenta" if node.op != "AccumulateGrad" else "bold green")
    if node.variable:
        text.append(" → " + ", ".join(node.variable), style="bold green")
    if node.tensors:
        text.append(f"  [{', '.join(node.tensors)}]", style="cyan")
    for s in node.saved:
        label = s.attr.removeprefix("_saved_")
        style = "bold red" if s.stale else "dim"
        state = "STALE: changed since saved" if s.stale else "ok"
        text.append(f"  saved {label}={s.tensor} @v{s.saved_version} ({state})", style=style)
    return text


def graph_tree(graph: GraphRecord) -> list[Tree]:
    """One tree per named non-leaf tensor, through next_functions down to the leaves."""
    trees: list[Tree] = []
    drawn: set[str] = set()
    like = alike(graph)
    for name, root in graph.roots.items():
        base = graph.views.get(name)
        head = Text(name, style="bold cyan")
        if base is not None:
            head.append(f" (view of {base})", style="yellow")
        tree = Tree(head)
        if root in drawn:
            tree.add(Text(f"{graph.nodes[root].op} (shown above)", style="dim"))
        else:
            _grow(tree, graph, root, drawn, 0, like)
        trees.append(tree)
    return trees


def _grow(tree: Tree, graph: GraphRecord, label: str, drawn: set[str], depth: int, like: dict[str, str]) -> None:
    node = graph.nodes[label]
    branch = tree.add(node_label(node))
    drawn.add(label)
    if depth >= MAX_DEPTH:
        branch.add(Text("…", style="dim"))
        return
    for nxt in node.next:
        if nxt is None:
            branch.add(Text("None (no gradient to this input)", style="dim"))
        elif nxt in drawn:
            branch.add(Text(f"{graph.nodes[nxt].op}{_names(graph.nodes[nxt])} (shown above)", style="dim"))
        elif nxt in like and like[nxt] in drawn:
            branch.add(Text(f"{graph.nodes[nxt].op} {_folded(like, nxt)}", style="dim"))
        else:
            _grow(branch, graph, nxt, drawn, depth + 1, like)


def _names(node: GraphNode) -> str:
    names = node.variable or node.tensors
    return f" → {', '.join(names)}" if node.variable else (f" [{', '.join(names)}]" if names else "")


def _folded(like: dict[str, str], label: str) -> str:
    """``(like N3, one of 57 folded)`` for a node drawn as the first one alike."""
    first = like[label]
    return f"(like {first}, one of {sum(1 for v in like.values() if v == first)} folded)"


def to_text(graph: GraphRecord) -> str:
    """Plain indented text of every node and edge (a node like three or more others: of the first)."""
    lines: list[str] = []
    for name, root in graph.roots.items():
        lines.append(f"{name} = {graph.nodes[root].op} ({root})")
    lines.append("")
    like = alike(graph)
    for node in graph.nodes.values():
        if node.label in like:
            continue
        extra = f" → {', '.join(node.variable)}" if node.variable else ""
        names = f" [{', '.join(node.tensors)}]" if node.tensors else ""
        folded = sum(1 for first in like.values() if first == node.label)
        lines.append(f"{node.label} {node.op}{extra}{names}" + (f" ({folded} more alike folded)" if folded else ""))
        for i, nxt in enumerate(node.next):
            after = f" {_folded(like, nxt)}" if nxt in like else ""
            lines.append(f"  next[{i}] -> {nxt if nxt is not None else 'None'}{after}")
        for s in node.saved:
            lines.append(f"  saved {s.attr} = {s.tensor} @v{s.saved_version}{' STALE' if s.stale else ''}")
    return "\n".join(lines) + "\n"


def _quote(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _label_lines(node: GraphNode) -> list[str]:
    """A node's box in DOT and Mermaid: its class, the leaf it feeds, what it saved."""
    lines = [node.op]
    if node.variable:
        lines.append("→ " + ", ".join(node.variable))
    for s in node.saved:
        lines.append(
            f"saved {s.attr.removeprefix('_saved_')}={s.tensor} v{s.saved_version}" + (" STALE" if s.stale else "")
        )
    return lines


def to_dot(graph: GraphRecord) -> str:
    """Graphviz DOT (edges point the way gradients flow)."""
    out = ["digraph autograd {", "  rankdir=TB;", '  node [shape=box, fontname="monospace"];']
    for name, root in graph.roots.items():
        out.append(f'  "t:{_quote(name)}" [label="{_quote(name)}", shape=ellipse, style=filled, fillcolor="#d0e8ff"];')
        out.append(f'  "t:{_quote(name)}" -> {root};')
    for node in graph.nodes.values():
        label = "\n".join(_label_lines(node))
        color = ', style=filled, fillcolor="#d8f5d0"' if node.variable else ""
        out.append(f'  {node.label} [label="{_quote(label)}"{color}];')
        for i, nxt in enumerate(node.next):
            if nxt is not None:
                out.append(f'  {node.label} -> {nxt} [label="{i}"];')
    out.append("}")
    return "\n".join(out) + "\n"


def to_mermaid(graph: GraphRecord) -> str:
    """A Mermaid flowchart for Markdown."""
    out = ["flowchart TD"]
    for i, (name, root) in enumerate(graph.roots.items()):
        out.append(f'  T{i}(["{_mq(name)}"]) --> {root}')
    for node in graph.nodes.values():
        label = "<br/>".join(_label_lines(node))
        out.append(f'  {node.label}["{_mq(label)}"]')
        for i, nxt in enumerate(node.next):
            if nxt is not None:
                out.append(f"  {node.label} -->|{i}| {nxt}")
    return "\n".join(out) + "\n"


def _mq(text: str) -> str:
    return text.replace('"', "#quot;")
