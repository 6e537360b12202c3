"""``tcopy examples NAME`` piped: the example file itself, byte for byte, so it can be saved or run."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest
from cli_runs import environ, piped, python, tcopy

from tcopy_cli import examples

pytestmark = pytest.mark.e2e  # through the real command line and worker

EXAMPLES_DIR = Path(examples.__file__).parent
ENV = environ("COLUMNS", "FORCE_COLOR")


def test_every_example_prints_byte_for_byte_when_piped() -> None:
    # Narrow COLUMNS would have folded long lines under the old Rich rendering.
    env = {**ENV, "COLUMNS": "40"}
    for name in examples.names():
        proc = tcopy("examples", name, env=env, timeout=60, text=False)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == (EXAMPLES_DIR / f"{name}.py").read_bytes(), name


@pytest.mark.parametrize("name", ["cross_device", "clone_detach_data"])
def test_examples_piped_into_python_run_as_the_file(name: str, tmp_path: Path) -> None:
    # The shell pipe itself: tcopy examples NAME | python -
    through = piped(["examples", name], shlex.join([sys.executable, "-"]), env=ENV, cwd=tmp_path)
    direct = python(str(EXAMPLES_DIR / f"{name}.py"), env=ENV, cwd=tmp_path, text=False)
    assert through.returncode == direct.returncode
    assert through.stdout == direct.stdout
    assert b"SyntaxError" not in through.stderr
