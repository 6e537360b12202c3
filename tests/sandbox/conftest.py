"""Fixtures shared by the sandbox suites."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_guard import guarded

from tcopy_cli.worker import TEST_HOOK_ENV


@pytest.fixture
def guard(tmp_path: Path) -> Iterator[Path]:
    """Run in an empty directory; fail if a file appears or a process/file event fires
    (``sandbox_guard.guarded`` around the whole test)."""
    with guarded(tmp_path) as path:
        yield path


@pytest.fixture
def allow_test_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let a worker run the test hook a request carries (the probes the kernel-wall suites send);
    a file asks for it with ``pytestmark = pytest.mark.usefixtures("allow_test_hook")``."""
    monkeypatch.setenv(TEST_HOOK_ENV, "1")
