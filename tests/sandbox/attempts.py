"""Run real Python inside the worker through the test hook, as a script that got past the
language sandbox would, and collect what each attempt did.

``TCOPY_WALL_UNCONFINED=1`` runs the same attempts in an unconfined worker (``--trust``):
every attack test must then fail, which shows it can (see ``tests/sandbox/test_wall.py``).
"""

from __future__ import annotations

import os
from typing import Any

from tcopy_cli.limits import Limits
from tcopy_cli.program import parse_program
from tcopy_cli.supervise import WorkerOptions, run_in_worker

UNCONFINED = os.environ.get("TCOPY_WALL_UNCONFINED") == "1"

# Runs inside the worker; `report(name, value)` sends a result back.
ATTEMPT = """
import ctypes as _ctypes
def attempt(name, action):
    try:
        result = action()
    except BaseException as exc:
        report(name, "refused: " + type(exc).__name__ + ": " + str(exc))
    else:
        report(name, "ALLOWED: " + repr(result)[:100])
_libc = _ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = _ctypes.c_long
def raw(name, *args):
    '''A system call by name (libseccomp resolves its number); OSError with its errno if it fails.'''
    from tcopy_cli.process import libseccomp
    nr = libseccomp.resolve(name)
    if nr is None:
        raise OSError(38, "no such call on this architecture")
    result = _libc.syscall(_ctypes.c_long(nr), *args)
    if result < 0:
        err = _ctypes.get_errno()
        raise OSError(err, name + ": " + __import__("os").strerror(err))
    return result
"""


def run_hook(options: WorkerOptions, source: str = "x = 1") -> dict[str, Any]:
    """Run ``options.test_hook`` in a worker and return what it reported."""
    reports: list[Any] = []
    run_in_worker(parse_program(source, "<test>"), options, lambda _s: None, lambda _i: None, on_hook=reports.append)
    if not reports:
        raise RuntimeError("the worker did not run the test hook (is TCOPY_ALLOW_TEST_HOOK=1 set?)")
    result: dict[str, Any] = reports[0]
    return result


def in_worker(code: str, trust: bool = False, limits: Limits | None = None) -> dict[str, Any]:
    """What ``code`` reported, run after confinement in a worker (unconfined with ``trust``)."""
    options = WorkerOptions(trust=trust or UNCONFINED, limits=limits or Limits(), test_hook={"code": ATTEMPT + code})
    return run_hook(options)


def assert_refused(results: dict[str, Any], *names: str, errno: int | None = None) -> None:
    """Each attempt ``names`` raised (with ``errno``: an OSError with that number)."""
    for name in names:
        assert results[name].startswith("refused"), f"{name}: {results[name]}"
        if errno is not None:
            assert f"[Errno {errno}]" in results[name], f"{name}: {results[name]}"
