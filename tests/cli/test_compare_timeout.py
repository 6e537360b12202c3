"""``tcopy compare --timeout`` bounds each experiment run as the user wrote it, and the message
names the experiment that ran out (its expression and which of its runs)."""

from __future__ import annotations

import subprocess
import time

import pytest
from cli_runs import ROOT, environ, tcopy

pytestmark = pytest.mark.e2e  # through the real command line and worker


def compare(*args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    began = time.monotonic()
    proc = tcopy("compare", *args, env=environ(PYTHONPATH=str(ROOT)), timeout=240)
    return proc, time.monotonic() - began


def test_a_setup_that_hangs_in_c_is_stopped_after_timeout_and_named() -> None:
    # sum(range(...)) is one C call: no signal in the worker interrupts it; the parent's bound does.
    setup = "x = torch.randn(3, requires_grad=True)\nn = sum(range(10**12))"
    proc, took = compare("x.clone()", "x.detach()", "x.data", "--setup", setup, "--timeout", "1")
    assert proc.returncode == 1, proc.stderr
    assert "took longer than 1 s (limit --timeout)" in proc.stderr, proc.stderr
    assert "`x.clone()`" in proc.stderr and "run 1 of up to 4" in proc.stderr, proc.stderr
    # --timeout 1 for that one experiment (plus a second's grace), not 4 × 3 expressions × 1 s;
    # the rest is the worker's start-up (importing torch), slow on a busy machine.
    assert took < 60, took


def test_a_setup_that_hangs_in_python_is_stopped_in_the_worker_and_named() -> None:
    proc, _ = compare("x.clone()", "--setup", "x = torch.ones(2)\nwhile True:\n    pass", "--timeout", "1")
    assert proc.returncode == 1, proc.stderr
    assert "x.clone()" in proc.stderr and "run 1 of up to 4" in proc.stderr, proc.stderr


def test_the_overall_bound_is_in_the_help() -> None:
    proc, _ = compare("--help")
    text = " ".join(proc.stdout.split())
    assert "4 × N × --timeout" in text, proc.stdout
