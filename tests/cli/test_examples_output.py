"""``tcopy examples NAME`` piped: the example file itself, byte for byte, so it can be saved or run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tcopy_cli import examples

pytestmark = pytest.mark.e2e  # through the real command line and worker

EXAMPLES_DIR = Path(examples.__file__).parent
ENV = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FORCE_COLOR")}


def test_every_example_prints_byte_for_byte_when_piped() -> None:
    # Narrow COLUMNS would have folded long lines under the old Rich rendering.
    env = {**ENV, "COLUMNS": "40"}
    for name in examples.names():
        proc = subprocess.run(
            [sys.executable, "-m", "tcopy_cli", "examples", name], capture_output=True, env=env, timeout=60
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == (EXAMPLES_DIR / f"{name}.py").read_bytes(), name


@pytest.mark.parametrize("name", ["cross_device", "clone_detach_data"])
def test_examples_piped_into_python_run_as_the_file(name: str, tmp_path: Path) -> None:
    # The shell pipe itself: tcopy examples NAME | python -
    piped = subprocess.run(
        f"{sys.executable} -m tcopy_cli examples {name} | {sys.executable} -",
        shell=True,
        capture_output=True,
        env=ENV,
        timeout=120,
        cwd=tmp_path,
    )
    direct = subprocess.run(
        [sys.executable, str(EXAMPLES_DIR / f"{name}.py")], capture_output=True, env=ENV, timeout=120, cwd=tmp_path
    )
    assert piped.returncode == direct.returncode
    assert piped.stdout == direct.stdout
    assert b"SyntaxError" not in piped.stderr
