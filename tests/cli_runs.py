"""Running tcopy's command line from a test, the two ways the tests do it.

- In a process of its own, as a user runs it: ``tcopy(*args)`` is ``python -m tcopy_cli ARGS``
  (``python(*args)`` the same for any ``python ARGS``, e.g. a ``-c`` driver that starts the command
  line itself; ``piped(args, into)`` the command line's output through a shell pipe). Each returns
  the finished process: ``returncode``, ``stdout``, ``stderr``. ``environ()`` makes the environment
  for one from this process's.
- In this process, through Typer's ``CliRunner``: ``invoke(*args)`` returns the runner's ``Result``,
  ``cli(*args)`` its exit code, stdout and stderr. (``recorded.run_cli`` is the same with the worker's
  frames read from a recording.)

Nothing here sets an environment variable, a directory or a time limit a test did not ask for: the
environment is this process's unless ``env`` is given (whole, as ``subprocess.run`` takes it), and
``timeout`` is a ceiling for the wait (the test fails with ``TimeoutExpired`` past it; None: no
ceiling), never a measure of speed.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from typer.testing import CliRunner, Result

from tcopy_cli.cli import app

ROOT = Path(__file__).resolve().parents[1]
"""The checkout: where ``tcopy_cli`` is imported from (tests put it on PYTHONPATH for a child)."""


def environ(*drop: str, **values: str) -> dict[str, str]:
    """This process's environment without the variables named in ``drop``, with ``values`` set."""
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(values)
    return env


def python(
    *args: str,
    input: str | bytes | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    timeout: float | None = 120,
    text: bool = True,
    errors: str | None = None,
) -> subprocess.CompletedProcess[Any]:
    """``python ARGS`` (this interpreter), its output captured; ``text=False`` for bytes.

    ``input``: what its standard input reads (None: it inherits this process's); ``env``: its whole
    environment (None: this process's)."""
    return subprocess.run(
        [sys.executable, *args],
        input=input,
        capture_output=True,
        text=text,
        errors=errors,
        env=env,
        cwd=cwd,
        timeout=timeout,
        check=False,
    )


def tcopy(*args: str, **options: Any) -> subprocess.CompletedProcess[Any]:
    """``python -m tcopy_cli ARGS``: the real command line in a process of its own (``options``: those
    ``python`` takes)."""
    return python("-m", "tcopy_cli", *args, **options)


def piped(
    args: Sequence[str],
    into: str,
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    timeout: float | None = 120,
) -> subprocess.CompletedProcess[bytes]:
    """``python -m tcopy_cli ARGS | INTO`` through the shell (``into``: a shell command); bytes."""
    command = f"{shlex.join([sys.executable, '-m', 'tcopy_cli', *args])} | {into}"
    return subprocess.run(command, shell=True, capture_output=True, env=env, cwd=cwd, timeout=timeout, check=False)


def invoke(*args: str, input: str | bytes | None = None, env: Mapping[str, str | None] | None = None) -> Result:
    """``tcopy ARGS`` in this process, through Typer's ``CliRunner`` (the worker is a real one)."""
    return CliRunner().invoke(app, list(args), input=input, env=env)


def cli(
    *args: str, input: str | bytes | None = None, env: Mapping[str, str | None] | None = None
) -> tuple[int, str, str]:
    """``invoke``'s exit code, stdout and stderr; an exception the command line let out (anything
    but its exit) is raised here, so a test never reads a crash as an exit code."""
    result = invoke(*args, input=input, env=env)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr
