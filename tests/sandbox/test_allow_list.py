"""The seccomp allow-list lets real Python, torch and NumPy do their work.

Every script of the corpora, the shipped examples and tests/sandbox/workloads (training
loops with Adam, torch.func, distributions, thread pools) runs as real CPython, with
``runpy``, inside the confined worker (as the one engine will run every script) and in
an unconfined one: each must end the same way in both, and print the same text.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest
from attempts import in_worker

from tcopy_cli.process import seccomp

pytestmark = [
    pytest.mark.e2e,  # through the real command line and worker
    pytest.mark.usefixtures("allow_test_hook"),  # the probes travel as the test hook
]

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(
    [
        *ROOT.glob("tests/corpus/*/*.py"),
        *ROOT.glob("tests/outside/*.py"),
        *(p for p in ROOT.glob("tcopy_cli/examples/*.py") if p.name != "__init__.py"),
        *ROOT.glob("tests/sandbox/workloads/*.py"),
    ]
)

RUN_ALL = """
import contextlib, io, os, random, sys, warnings
import numpy, torch
outcomes = {}
for path, source in SOURCES.items():
    torch.manual_seed(0), random.seed(0), numpy.random.seed(0)
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(compile(source, path, "exec"), {"__name__": "__main__", "__file__": path})
        ending = "ok"
    except BaseException as exc:
        ending = type(exc).__name__ + ": " + str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
    outcomes[path] = (ending, out.getvalue())
report("outcomes", outcomes)
"""


def _outcomes(trust: bool) -> dict[str, Any]:
    sources = {str(p.relative_to(ROOT)): p.read_text() for p in SCRIPTS}  # the worker can't read them itself
    code = f"SOURCES = {sources!r}\n" + RUN_ALL
    result: dict[str, Any] = in_worker(code, trust=trust)["outcomes"]
    return result


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux") or bool(seccomp.unavailable()), reason="needs seccomp")
def test_every_corpus_script_ends_the_same_confined_and_unconfined() -> None:
    assert len(SCRIPTS) > 150
    confined, free = _outcomes(trust=False), _outcomes(trust=True)
    assert confined.keys() == free.keys()
    endings = {name: (confined[name][0], free[name][0]) for name in confined if confined[name][0] != free[name][0]}
    assert not endings, endings
    printed = [name for name in confined if _mask(confined[name][1]) != _mask(free[name][1])]
    assert not printed, {name: (confined[name][1][:300], free[name][1][:300]) for name in printed[:3]}


def _mask(text: str) -> str:
    """Printed text without what differs between two runs of one process: addresses, pointers, ids."""
    return re.sub(r"0x[0-9a-f]+|\b\d{9,}\b", "#", text)
