"""Shared by the sandbox security suites: an audit hook that records side effects, and
the check that a script was refused or ended in an error step."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from tcopy_cli.engine import run_source
from tcopy_cli.errors import ScriptRejected
from tcopy_cli.limits import Limits
from tcopy_cli.trace.records import Step

SIDE_EFFECT_EVENTS = frozenset(
    """
    subprocess.Popen os.system os.exec os.posix_spawn os.spawn os.fork os.forkpty pty.spawn
    os.startfile os.kill os.killpg socket.connect socket.bind socket.sendto os.remove
    os.rename os.rmdir os.mkdir os.truncate os.symlink os.link os.chmod os.chown
    shutil.rmtree shutil.move shutil.copyfile shutil.make_archive webbrowser.open
    ctypes.dlopen ctypes.addressof ctypes.string_at
    """.split()
)
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
AUDIT: dict[str, Any] = {"on": False, "events": []}


def _audit_hook(event: str, args: tuple[Any, ...]) -> None:
    if not AUDIT["on"]:
        return
    if event in SIDE_EFFECT_EVENTS:
        if _supervisor(event, args):
            return
        AUDIT["events"].append((event, repr(args)[:200]))
    elif event == "open" and len(args) >= 3:
        path, mode, flags = args[0], args[1], args[2]
        writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            isinstance(flags, int) and flags & _WRITE_FLAGS
        )
        if writing and "__pycache__" not in str(path):  # lazy imports may write bytecode
            AUDIT["events"].append((event, repr(args)[:200]))


def _supervisor(event: str, args: tuple[Any, ...]) -> bool:
    """The command line's own worker process: started and ended by tcopy, not by the script;
    and the observer reading a small tensor's own bytes (its content key)."""
    if event == "ctypes.string_at":
        caller = sys._getframe(3).f_code  # this function, the audit hook, ctypes.string_at, its caller
        return caller.co_name == "content_key" and caller.co_filename.endswith(os.path.join("trace", "summary.py"))
    if event == "subprocess.Popen":
        return "tcopy_cli.worker" in repr(args[1] if len(args) > 1 else args)
    return event == "os.killpg"


# Installed once per process (a module is imported once); hooks can't be removed, and
# this one is inert outside `guarded`.
sys.addaudithook(_audit_hook)


@contextmanager
def guarded(tmp_path: Path) -> Iterator[Path]:
    """Run in an empty directory; fail if a file appears or a process/file event fires."""
    cwd = os.getcwd()
    os.chdir(tmp_path)
    AUDIT["events"] = []
    AUDIT["on"] = True
    try:
        yield tmp_path
    finally:
        AUDIT["on"] = False
        os.chdir(cwd)
    assert AUDIT["events"] == [], "the script caused side effects"
    assert sorted(p.name for p in tmp_path.iterdir()) == [], "the script wrote files"
    assert torch.is_grad_enabled()


def refused(src: str, limits: Limits | None = None) -> ScriptRejected | Step:
    """Run ``src``; it must be refused up front or end in an error step. Anything else fails."""
    try:
        trace = run_source(src, limits=limits)
    except ScriptRejected as exc:
        assert exc.line is not None and exc.line >= 1, f"no line number: {exc.line!r}"
        assert exc.column is not None and exc.column >= 1, f"no column: {exc.column!r}"
        assert exc.message
        return exc
    assert trace.steps, "no step ran"
    step = trace.steps[-1]
    assert step.status == "error", f"the script ran to the end: {[(s.source, s.stdout) for s in trace.steps]}"
    assert step.error is not None and step.error.message
    assert trace.summary is not None and trace.summary.status == "error"
    return step
