"""Runs of ``tcopy run`` from recorded facts: the command line in this process, the worker's frames from a file.

Rendering and explaining are pure functions of the fact-only steps a worker sends. A
recording is what the worker sends for one request (the script and the run's settings):
its frames, one per line, as ``tcopy_cli.worker`` writes them (a JSON Lines file, gzipped:
a loop over a list of a thousand tensors sends some 20 MB). ``run_cli`` invokes the
real command line (option parsing, the parent's strict decoder, the explain pass, the
views, exit codes) with the worker's process replaced by one that prints the recording,
so a case takes milliseconds instead of a worker start, ``import torch`` and the script.

Recordings live in ``tests/recordings/``, one file per request, named by a digest of the
request (tests that run the same script with the same settings share one). The first line
is the request itself, then the frames. They are made by running the script through the
worker's own code in this process (unconfined):
``TCOPY_UPDATE_GOLDEN=1 pytest ...`` records every request the tests make again; never edit them by
hand. ``tests/test_recordings.py`` runs each recorded request again and checks that the
engine still sends what the recording holds.
"""

from __future__ import annotations

import dataclasses
import gc
import gzip
import hashlib
import io
import json
import os
import random
import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from cli_runs import invoke
from typer.testing import Result

from tcopy_cli import supervise
from tcopy_cli.program import Program
from tcopy_cli.trace import frames

RECORDINGS = Path(__file__).parent / "recordings"
UPDATE = os.environ.get("TCOPY_UPDATE_GOLDEN") == "1"
CONFINEMENT = "landlock+seccomp+namespaces+rlimits"
"""What a recording's start frame says confined the script: what a worker behind the whole wall says (the
recording is made in the test process, unconfined; the views are drawn as a user sees them)."""
_VOLATILE = ("allow_read", "test_hook")
"""Request fields that do not change what the worker sends for the script (beyond its RunInfo)."""


def request_key(req: dict[str, Any]) -> dict[str, Any]:
    """The part of a worker request a recording answers."""
    return {k: v for k, v in req.items() if k not in _VOLATILE}


def path_for(req: dict[str, Any]) -> Path:
    """The recording's file for ``req``."""
    digest = hashlib.sha256(json.dumps(request_key(req), sort_keys=True).encode()).hexdigest()
    return RECORDINGS / f"{digest[:16]}.jsonl.gz"


def record(req: dict[str, Any]) -> bytes:
    """The frames the worker sends for ``req``, made by the worker's own code in this process (imports torch)."""
    import torch

    from tcopy_cli import worker

    # A worker draws from a generator seeded anew in each process: a recording starts from one seed, so a
    # script that draws without seeding is recorded the same each time (and checked against the same).
    torch.manual_seed(0)
    random.seed(0)
    out = io.BytesIO()
    try:
        confinement = "none (--trust)" if req.get("trust") else CONFINEMENT
        worker._serve(dict(req, allow_read=[]), worker.Channel(out), confinement, None)
    finally:
        gc.unfreeze()  # the worker freezes what its imports made: this process goes on
    return out.getvalue()


def write(req: dict[str, Any]) -> Path:
    """Record ``req`` and store it (the request on the first line, then the frames)."""
    path = path_for(req)
    path.parent.mkdir(exist_ok=True)
    data = json.dumps(request_key(req), sort_keys=True).encode() + b"\n" + record(req)
    path.write_bytes(gzip.compress(data, mtime=0))
    return path


def read(path: Path) -> tuple[dict[str, Any], bytes]:
    """A recording's request and its frames."""
    head, _, recorded = gzip.decompress(path.read_bytes()).partition(b"\n")
    return json.loads(head), recorded


_recorded_now: set[Path] = set()
"""Recordings this process made (with TCOPY_UPDATE_GOLDEN=1 each is made once, then shared)."""


def _launch(program: Program, options: supervise.WorkerOptions) -> subprocess.Popen[bytes]:
    """A stand-in for the worker: a process that prints the recorded frames for this request."""
    req = supervise.request(program.source, program.origin, options)
    path = path_for(req)
    if UPDATE and path not in _recorded_now:
        _recorded_now.add(write(req))
    if not path.exists():
        pytest.fail(
            f"no recording of this run ({path.name}): record it with TCOPY_UPDATE_GOLDEN=1 and commit the new file "
            f"(script {program.source[:60]!r})"
        )
    recorded_with = _torch_of(path)
    if recorded_with != _installed_torch():  # plain python's numbers, which many tests compare with, differ
        pytest.skip(f"recorded with torch {recorded_with}")
    return subprocess.Popen(
        ["sh", "-c", 'gzip -dc -- "$1" | tail -n +2', "recording", str(path)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # supervise.stop ends the process group
    )


def _torch_of(path: Path) -> str:
    """The torch release a recording was made with (its first frame says)."""
    with gzip.open(path) as f:
        f.readline()
        frame = frames.FrameDecoder().decode(f.readline().rstrip(b"\n"))
    info = frame.data.get("info")  # a start frame, or a refusal (a usage_error or run_error frame says nothing)
    return str(info.torch) if info is not None else _installed_torch()


def _installed_torch() -> str:
    from importlib.metadata import version

    return version("torch")  # without importing it


@contextmanager
def recorded_worker() -> Iterator[None]:
    """Within: every run's worker is its recording."""
    mp = pytest.MonkeyPatch()
    mp.setattr(supervise, "launch", _launch)
    try:
        yield
    finally:
        mp.undo()


def run_cli(args: list[str], env: dict[str, str] | None = None) -> Result:
    """``tcopy <args>`` through the real command line, with the worker's frames from the recording."""
    with recorded_worker():
        return invoke(*args, env=env)


_IDENTITIES = frozenset({"object_id", "node_id", "reach_ids"})
"""Record fields that relate records of one run by Python object identity (they differ between runs)."""


def same_facts(recorded: bytes, now: bytes) -> bool:
    """Whether two runs' frames hold the same facts: the same but for addresses (``data_ptr``) and object
    identities (ints of 9 digits or more, sets of them), first as text, then (where references to
    earlier records fell out otherwise) decoded by the parent's decoder."""
    return facts_text(recorded) == facts_text(now) or comparable(recorded) == comparable(now)


_IDS = re.compile(rb'\{"__frozenset":\[[-0-9,]*\]\}|-?\b\d{9,}\b(?!\.)')


def facts_text(recorded: bytes) -> bytes:
    """Frames with addresses and object identities (and sets of them) written ``<id>``."""
    return _IDS.sub(b"<id>", recorded)


def comparable(recorded: bytes) -> list[Any]:
    """The frames decoded by the parent's decoder, with what differs between two runs of one script left out:
    addresses (``data_ptr``: any int of 9 digits or more) and object identities. What the views and notes
    are made from (values, shapes, storage and version-counter labels, ops, errors) stays."""
    decoder = frames.FrameDecoder()
    return [(f.kind, _plain(f.data)) for f in map(decoder.decode, frames_lines(recorded))]


def frames_lines(data: bytes) -> list[bytes]:
    """The lines of a recording's frames."""
    return [line for line in data.split(b"\n") if line]


def _plain(v: Any) -> Any:
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        fields = (f.name for f in dataclasses.fields(v) if f.name not in _IDENTITIES)
        return (type(v).__name__, {name: _plain(getattr(v, name)) for name in fields})
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (set, frozenset)):
        return sorted(repr(_plain(x)) for x in v)
    if isinstance(v, float) and v != v:
        return "nan"
    if isinstance(v, int) and not isinstance(v, bool) and abs(v) >= 10**9:
        return "<address>"
    return v
