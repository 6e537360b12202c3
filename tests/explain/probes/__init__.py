"""Probe scripts: small PyTorch scripts, each about one area learners get wrong.

Each probe carries its own checks as comments under the line they are about:

- ``# plain: CODE``: a fact checked in plain PyTorch, by running the script one top-level
  statement at a time with ``exec`` and then CODE (consecutive ``# plain:`` lines are one
  block) after the top-level statement that holds the line above;
- ``# says: PHRASE``: a note or error explanation of a step of the line above holds PHRASE;
- ``# never: PHRASE``: no note or error explanation of a step of the line above holds PHRASE;
- ``# nowhere: PHRASE`` (anywhere in the file): no note or explanation of the run holds it;
- ``# loop: PHRASE``: the summary of the loop whose header is the line above holds PHRASE;
- ``# says(N): PHRASE`` (and ``never(N)``): as ``says``, about line N (the steps of a loop body,
  checked below the loop so that the checks don't move its lines).

A ``says`` states what a note must tell; the ``plain`` check above it shows that it is so.
``tests/explain/test_probes.py`` runs both; ``python -m tests.explain.probes`` prints every
note tcopy gives on the probes, for reading them.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).parent
_CHECK = re.compile(r"^\s*# (plain|says|never|nowhere|loop)(?:\((\d+)\))?: ?(.*)$")


@dataclass
class Probe:
    """One probe script and the checks its comments carry."""

    name: str
    source: str
    plain: dict[int, list[str]] = field(default_factory=dict)
    """Line of a top-level statement's first line → code blocks run after that statement."""
    says: dict[int, list[str]] = field(default_factory=dict)
    never: dict[int, list[str]] = field(default_factory=dict)
    nowhere: list[str] = field(default_factory=list)
    loop: dict[int, list[str]] = field(default_factory=dict)


def probe_names() -> list[str]:
    """Every probe, by file name."""
    return sorted(p.stem for p in HERE.glob("*.py") if not p.name.startswith("_"))


def load(name: str) -> Probe:
    """The probe ``name`` with its checks."""
    source = (HERE / f"{name}.py").read_text()
    tree = ast.parse(source)
    tops = [(node.lineno, node.end_lineno or node.lineno) for node in tree.body]
    probe = Probe(name, source)
    code_line = 0
    last_kind = ""
    for number, text in enumerate(source.splitlines(), 1):
        m = _CHECK.match(text)
        if m is None:
            if text.strip() and not text.lstrip().startswith("#"):
                code_line = number
            last_kind = ""
            continue
        kind, about, body = m[1], m[2], m[3]
        if kind == "plain":
            top = max(start for start, _ in tops if start <= code_line)
            blocks = probe.plain.setdefault(top, [])
            if last_kind == "plain":
                blocks[-1] += "\n" + body
            else:
                blocks.append(body)
        elif kind == "nowhere":
            probe.nowhere.append(body)
        else:
            getattr(probe, kind).setdefault(int(about) if about else code_line, []).append(body)
        last_kind = kind
    return probe
