"""The probes (``tests/explain/probes``): what each states is so in plain PyTorch, and tcopy says it.

For each probe, the ``plain`` checks run on the script executed by plain Python, one
top-level statement at a time; the ``says``/``never``/``nowhere`` checks read the notes
and error explanations tcopy gives on the same script, and the ``loop`` checks the
summary of a loop. A phrase a note must hold is checked in plain PyTorch first.
"""

from __future__ import annotations

import ast
import re
import warnings
from typing import Any

import pytest
import torch
from probes import Probe, load, probe_names

from tcopy_cli.pipeline import run_source
from tcopy_cli.render.jsonl import loop_json
from tcopy_cli.render.loops import LoopSummary, LoopTracker
from tcopy_cli.trace.records import Step

_EXPECT = re.compile(r"#\s*expect:\s*(\w+)")


def shares_counter(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether two tensors share one version counter: move a's, read b's, put a's back."""
    before_a, before_b = a._version, b._version
    torch._C._autograd._unsafe_set_version_counter((a,), (before_a + 1000,))
    try:
        return b._version == before_a + 1000 and before_a == before_b
    finally:
        torch._C._autograd._unsafe_set_version_counter((a,), (before_a,))


def run_plain(probe: Probe) -> dict[str, Any]:
    """The probe run by plain Python statement by statement, each ``plain`` check after its statement."""
    namespace: dict[str, Any] = {"torch": torch, "shares_counter": shares_counter, "__name__": "__main__"}
    lines = probe.source.splitlines()
    for node in ast.parse(probe.source).body:
        expect = _EXPECT.search(lines[node.lineno - 1])
        code = compile(ast.Module(body=[node], type_ignores=[]), probe.name, "exec")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if expect is not None:
                with pytest.raises(Exception) as raised:
                    exec(code, namespace)
                assert type(raised.value).__name__ == expect[1], (probe.name, node.lineno, raised.value)
            else:
                exec(code, namespace)
        for block in probe.plain.get(node.lineno, []):
            exec(compile(block, f"{probe.name}:{node.lineno} plain", "exec"), namespace)
    return namespace


def said(step: Step) -> str:
    """Every note and the error explanation of a step, as one text."""
    parts = list(step.notes)
    if step.error is not None:
        parts.append(step.error.explanation)
    return "\n".join(parts)


def loop_summaries(steps: list[Step]) -> list[LoopSummary]:
    tracker = LoopTracker()
    out: list[LoopSummary] = []
    for step in steps:
        out += tracker.feed(step)
    return out + tracker.close()


@pytest.mark.parametrize("name", probe_names())
def test_plain_pytorch_bears_out_the_probe(name: str) -> None:
    run_plain(load(name))


@pytest.mark.parametrize("name", probe_names())
def test_tcopy_says_what_the_probe_needs(name: str) -> None:
    probe = load(name)
    trace = run_source(probe.source, keep_going=True)
    by_line: dict[int, list[str]] = {}
    for step in trace.steps:
        by_line.setdefault(step.line, []).append(said(step))
    everything = "\n".join(t for texts in by_line.values() for t in texts)
    for line, phrases in probe.says.items():
        text = "\n".join(by_line.get(line, []))
        for phrase in phrases:
            assert phrase in text, (name, line, phrase, text)
    for line, phrases in probe.never.items():
        text = "\n".join(by_line.get(line, []))
        for phrase in phrases:
            assert phrase not in text, (name, line, phrase, text)
    for phrase in probe.nowhere:
        assert phrase not in everything, (name, phrase)
    if probe.loop:
        summaries = loop_summaries(trace.steps)
        for line, phrases in probe.loop.items():
            text = "\n".join(str(loop_json(s)) for s in summaries if s.line == line)
            for phrase in phrases:
                assert phrase in text, (name, line, phrase, text)
