"""Each recording in tests/recordings/ is what the engine sends for its request now.

The views' and notes' tests read recorded facts (``tests/recorded.py``); a change in the
engine that changes the facts of a recorded script fails here, not silently in them.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
import torch
from recorded import CONFINEMENT, RECORDINGS, comparable, facts_text, read, record, same_facts

from tcopy_cli import supervise
from tcopy_cli.program import parse_program

STALE = "{name} is not what the engine sends for its script now: record it again (the tests with TCOPY_UPDATE_GOLDEN=1)"


_CHECKED: set[bytes] = set()
"""Frames checked already (a table's and JSON's recording of a short script differ only in --max-steps)."""


def _recorded_torch(frames: list[Any]) -> str:
    kind, data = frames[0]
    assert kind == "start"
    return str(data["info"][1]["torch"])


@pytest.mark.parametrize("path", sorted(RECORDINGS.glob("*.jsonl.gz")), ids=lambda p: p.name.split(".")[0])
def test_a_recording_is_what_the_engine_sends_now(path: Path) -> None:
    req, recorded = read(path)
    start = comparable(recorded.partition(b"\n")[0])
    if _recorded_torch(start) != torch.__version__:
        pytest.skip(f"recorded with torch {_recorded_torch(start)}")
    seen = hashlib.sha256(facts_text(recorded)).digest()
    if seen not in _CHECKED:
        assert same_facts(recorded, record(req)), STALE.format(name=path.name)
        _CHECKED.add(seen)


@pytest.mark.e2e
def test_the_confined_worker_sends_what_the_recording_holds() -> None:
    # the training loop of the folding tests, through the real worker: same facts, but for what confines it
    from render.test_folding import TRAINING

    options = supervise.WorkerOptions(printable=True)
    req = supervise.request(TRAINING, "<inline>", options)
    proc = supervise.launch(parse_program(TRAINING, "<inline>"), options)
    out, _ = proc.communicate()
    sent, ours = comparable(out), comparable(record(req))
    assert sent[1:] == ours[1:]
    assert ours[0][1]["info"][1]["confinement"] == CONFINEMENT
    assert sent[0][1]["info"][1]["source"] == ours[0][1]["info"][1]["source"] == "<inline>"
