"""The parent side of a run: start the worker, read its frames, report how it ended.

Nothing here imports torch. ``run_in_worker`` has the shape of an in-process run: it
calls ``start`` with the RunInfo, ``emit`` with every Step (passed through the ``explain``
pass its caller gives: the worker sends facts, ``tcopy_cli.pipeline`` assembles a run), and
returns the RunSummary. Whatever happens to the worker, the caller gets a summary: a worker that
crashes, is killed, runs past ``--timeout``, sends more than ``max_wire_bytes`` or sends
anything but a valid frame becomes an error step at the statement it was running.

The parent trusts nothing it reads: every line goes through ``frames.FrameDecoder`` (one
strict decoder, from the records' annotations), the frames must come in the order a worker
sends them (one ``start``; steps numbered 1, 2, 3 ...; ``process.account`` keeps that account),
and the run's summary is what the parent counted from the steps it received. The worker's
``end`` frame must agree with that count, and a run that would end "ok" must have reached the
script's last top-level statement (the parent's parsed script says which; the worker announces
each statement it starts): a script running in the worker can misreport its own facts, but it
can't make tcopy crash, reach the terminal raw, or exit 0 for a run whose frames stop before
the script's end.

The worker's command, environment and resource limits come from ``tcopy_cli.process.spawn``:
``RLIMIT_FSIZE`` 0 and ``RLIMIT_CORE`` 0 always, ``RLIMIT_CPU`` from ``--timeout``, and
``RLIMIT_DATA`` on the CPU device; an allow-listed environment unless ``--trust``. A REPL's
worker, kept between pieces of code, is ``process.session.WorkerSession``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tcopy_cli.errors import ScriptRejected, TcopyError, UsageError
from tcopy_cli.limits import Limits
from tcopy_cli.printable import printable_record
from tcopy_cli.process import spawn
from tcopy_cli.process.account import WorkerState, accept, last_statement
from tcopy_cli.program import Program, script_text
from tcopy_cli.trace import decoders, frames, wire
from tcopy_cli.trace.records import Note, RunInfo, RunSummary, Step

TIMEOUT_GRACE = 1.0
"""Seconds past --timeout the worker gets to report the timeout itself before it is killed."""

FINISH_GRACE = 2.0
"""Seconds a worker that sent its final frame gets to end by itself before it is killed."""
DEFAULT_MAX_WIRE_BYTES = 512 * 1024**2
"""Everything the worker may send (records, notes, values, stderr) in one run."""
STDERR_KEPT = 16 * 1024
STARTUP_TIMEOUT = 300.0
"""Seconds the worker may take to import torch and start the script (not part of --timeout)."""


class WorkerInternalError(TcopyError):
    """The worker reported a bug in tcopy."""


@dataclass(frozen=True)
class WorkerOptions:
    """How to run a script in a worker."""

    device: str = "cpu"
    limits: Limits = field(default_factory=Limits)
    keep_going: bool = False
    max_values: int = 100
    graph: bool = False
    trust: bool = False
    """Run unconfined (the user trusts the script); still in a separate process."""
    allow_read: tuple[str, ...] = ()
    """Files and directories the confined script may read (``--allow-read``)."""
    require_confinement: bool = False
    """Refuse to run where the kernel can't confine the worker (``--require-confinement``)."""
    max_wire_bytes: int = DEFAULT_MAX_WIRE_BYTES
    printable: bool = False
    """Hand the run's facts and steps on made ``printable`` (every view but JSON Lines)."""
    test_hook: dict[str, Any] | None = None
    """TEST ONLY: ``{"code": ..., "line": N}``; honoured only with TCOPY_ALLOW_TEST_HOOK=1."""


def request(source: str, origin: str, options: WorkerOptions) -> dict[str, Any]:
    """The JSON request the worker reads from stdin."""
    req: dict[str, Any] = {
        "source": source,
        "origin": origin,
        "device": options.device,
        "keep_going": options.keep_going,
        "max_values": options.max_values,
        "graph": options.graph,
        "limits": dataclasses.asdict(options.limits),
        "trust": options.trust,
        "allow_read": list(options.allow_read),
        "require_confinement": options.require_confinement,
    }
    if options.test_hook is not None:
        req["test_hook"] = options.test_hook
    return req


def popen(options: WorkerOptions, stdin: int) -> subprocess.Popen[bytes]:
    """The worker process: its command, resource limits and the parent-death signal (set in the
    child between fork and exec), and its environment (an allow-list unless ``--trust``), from
    ``process.spawn``."""
    return subprocess.Popen(
        spawn.worker_command(),
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=spawn.preexec(options),
        start_new_session=True,  # its own process group: killed as one, no terminal signals
        env=spawn.environment(trust=options.trust),
        close_fds=True,
    )


def run_in_worker(
    program: Program,
    options: WorkerOptions,
    emit: Callable[[Step], None],
    start: Callable[[RunInfo], None],
    on_hook: Callable[[Any], None] | None = None,
    proc: subprocess.Popen[bytes] | None = None,
    explain: Callable[[Step], Step] | None = None,
) -> RunSummary:
    """Run ``program`` in a confined worker; ScriptRejected/UsageError/TcopyError as in-process.

    ``proc``: the worker ``launch`` started for this run (the caller prepared its views
    meanwhile); None starts one here. ``explain``: the explain pass each step goes through
    before it is made printable and handed to ``emit``.
    """
    state = WorkerState(
        hook=on_hook,
        source=program.source,
        last=last_statement(program.tree),
        explain=explain,
        printable=options.printable,
        timeout=options.limits.timeout,
        max_printed=options.limits.max_output,
    )
    proc = _serve(proc if proc is not None else launch(program, options), options, state, emit, start)
    return conclude(proc, options, state, emit)


def launch(program: Program, options: WorkerOptions) -> subprocess.Popen[bytes]:
    """Start the worker for ``program`` and send it the request; ``run_in_worker`` reads it.

    The worker's start-up (confining itself, importing torch) takes most of a second:
    the command line starts it first and imports its views meanwhile. A caller that does
    not go on to ``run_in_worker`` must ``stop`` the process.
    """
    return _start(request(program.source, program.origin, options), options)


def compare_in_worker(
    expressions: list[str],
    setup: str,
    device: str,
    limits: Limits,
    start: Callable[[RunInfo], None] = lambda _info: None,
) -> list[dict[str, Any]]:
    """Run ``tcopy compare``'s experiments in one confined worker; the rows as the fields of each
    ``Comparison`` by name (``Comparison(**row)`` makes it again).

    Each experiment script keeps ``limits``: the worker announces each one (an ``experiment``
    frame), and the parent gives each ``--timeout`` as the user wrote it (a run that does not
    return in time is stopped and named). At most ``EXPERIMENTS_PER_EXPRESSION`` experiments per
    expression are accepted, so the whole comparison takes at most that many times
    ``--timeout`` per expression (plus the worker's start-up); the worker's CPU-time limit
    allows for all of them.
    """
    from tcopy_cli.trace.compare import Comparison

    runs = EXPERIMENTS_PER_EXPRESSION * max(len(expressions), 1)
    bound = dataclasses.replace(limits, timeout=limits.timeout * runs) if limits.timeout > 0 else limits
    options = WorkerOptions(device=device, limits=bound)
    req = {
        "compare": {"expressions": list(expressions), "setup": setup},
        "device": device,
        "limits": dataclasses.asdict(limits),
        "trust": False,
    }
    state = WorkerState(mode="compare", source=script_text(setup), timeout=limits.timeout, experiments_left=runs)
    failures: list[Step] = []
    proc = _serve(_start(req, options), options, state, failures.append, start)
    final = state.final or {}
    if final.get("kind") == "compare":
        try:
            return [decoders.decode_fields(Comparison, row) for row in final["rows"]]
        except frames.WireError as exc:
            raise TcopyError(f"the comparison did not finish: the worker sent an invalid record ({exc})") from None
    try:
        conclude(proc, options, state, failures.append)  # raises for a final frame
    except ScriptRejected as exc:  # the setup failed (timed out in the worker too): say in which experiment
        if state.experiment is not None:
            expression, run = state.experiment
            exc.message = f"{exc.message} (in the experiment on `{expression}`, {run})"
        raise
    message = failures[-1].error.message if failures and failures[-1].error else _ending(proc, state)
    raise TcopyError(f"the comparison did not finish: {message}")


EXPERIMENTS_PER_EXPRESSION = 4
"""The most experiment scripts ``tcopy compare`` runs for one expression."""


def _serve(
    proc: subprocess.Popen[bytes],
    options: WorkerOptions,
    state: WorkerState,
    emit: Callable[[Step], None],
    start: Callable[[RunInfo], None],
) -> subprocess.Popen[bytes]:
    """Read a started worker's frames into ``state`` until it ends, then end it; the finished process."""
    try:
        pump(proc, options, state, emit, start)
    finally:
        # A worker that sent its final frame ends by itself in a moment: let it (killed, the
        # processes between tcopy and it never collect its exit, and its CPU time and memory
        # go uncounted in tcopy's).
        stop(proc, grace=FINISH_GRACE if state.final is not None and state.killed_for is None else 0.0)
    return proc


def _start(req: dict[str, Any], options: WorkerOptions) -> subprocess.Popen[bytes]:
    """A worker process with ``req`` sent on its stdin (then closed)."""
    request_read, request_write = os.pipe()
    try:
        proc = popen(options, request_read)
    except BaseException:
        os.close(request_write)
        raise
    finally:
        os.close(request_read)
    try:
        _send_request(request_write, json.dumps(req).encode("utf-8"))
    except BaseException:
        stop(proc)
        raise
    return proc


def _send_request(fd: int, data: bytes) -> None:
    """Write the request and close the pipe (a worker that died early is reported later)."""
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except BrokenPipeError:
        pass
    finally:
        os.close(fd)


def pump(
    proc: subprocess.Popen[bytes],
    options: WorkerOptions,
    state: WorkerState,
    emit: Callable[[Step], None],
    start: Callable[[RunInfo], None],
) -> None:
    """Read the worker's frames into ``state`` until a final frame, the end of its output, or a reason
    to stop it (``state.killed_for``: timeout, startup, output, invalid)."""
    assert proc.stdout is not None and proc.stderr is not None
    timeout = state.timeout
    # Until the script starts, the worker is importing torch: --timeout counts from its start.
    # (A session's worker has started already: each piece of code gets --timeout.)
    deadline: float | None = time.monotonic() + STARTUP_TIMEOUT
    if state.info is not None:
        deadline = time.monotonic() + timeout + TIMEOUT_GRACE if timeout > 0 else None
    # Seconds spent showing steps (drawing them, waiting in --pause): not the run's time.
    # Decoding and explaining a step are: a worker can't buy time with frames costly to read.
    showing = [0.0]

    def show(step: Step) -> None:
        began = time.monotonic()
        try:
            emit(step)
        finally:
            showing[0] += time.monotonic() - began

    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ, "frames")
    sel.register(proc.stderr, selectors.EVENT_READ, "stderr")
    pending: list[bytes] = []
    pending_bytes = 0
    open_streams = 2
    try:
        while open_streams:
            wait = None if deadline is None else deadline - time.monotonic()
            if wait is not None and wait <= 0:
                state.killed_for = "timeout" if state.info is not None else "startup"
                return
            for key, _ in sel.select(wait):
                chunk = os.read(key.fileobj.fileno(), 1 << 16)  # type: ignore[union-attr]
                if not chunk:
                    sel.unregister(key.fileobj)
                    open_streams -= 1
                    continue
                state.wire_bytes += len(chunk)
                if state.wire_bytes > options.max_wire_bytes:
                    state.killed_for = "output"
                    return
                if key.data == "stderr":
                    state.stderr += chunk
                    del state.stderr[:-STDERR_KEPT]
                    continue
                if b"\n" not in chunk:  # part of a long line: join once it is complete
                    pending.append(chunk)
                    pending_bytes += len(chunk)
                    if pending_bytes > frames.MAX_FRAME_BYTES:
                        return _invalid(state, f"a frame of more than {frames.MAX_FRAME_BYTES:,} bytes")
                    continue
                *lines, rest = b"".join([*pending, chunk]).split(b"\n")
                pending, pending_bytes = ([rest], len(rest)) if rest else ([], 0)
                for line in lines:
                    started = time.monotonic()
                    shown = showing[0]
                    try:
                        frame = state.decoder.decode(line)
                        timed = accept(frame, state, show, start)
                    except frames.WireError as exc:
                        return _invalid(state, str(exc))
                    if timed:  # the run, or an experiment of a comparison, starts now
                        deadline = started + timeout + TIMEOUT_GRACE if timeout > 0 else None
                    if deadline is not None:  # time the parent spent showing a step (--pause) is not the run's
                        deadline += showing[0] - shown
                    if state.final is not None:
                        return
    finally:
        sel.close()


def _invalid(state: WorkerState, what: str) -> None:
    """Stop reading: the worker sent something that is not a frame it sends (``what`` was wrong)."""
    state.killed_for, state.invalid = "invalid", what


def stop(proc: subprocess.Popen[bytes], grace: float = 0.0) -> None:
    """Make sure the worker and anything it started are gone (its process group), after
    ``grace`` seconds for it to end by itself."""
    if grace > 0 and proc.poll() is None:
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
    proc.wait()


def conclude(
    proc: subprocess.Popen[bytes], options: WorkerOptions, state: WorkerState, emit: Callable[[Step], None]
) -> RunSummary:
    final = state.final or {}
    kind = final.get("kind")
    if kind == "end" and state.summary is not None:
        return state.summary
    if state.killed_for == "invalid" and state.info is None:
        raise TcopyError(f"the worker sent an invalid record before the run started ({state.invalid})")
    if kind == "rejected":
        exc = ScriptRejected(final["message"], final.get("line"), final.get("column"))
        exc.info = final["info"]  # type: ignore[attr-defined]
        raise exc
    if kind == "usage_error":
        raise UsageError(final["message"])
    if kind == "run_error":
        raise TcopyError(final["message"])
    if kind == "internal_error":
        raise WorkerInternalError(  # (a script that writes to tcopy's channel itself can send this too)
            f"the worker process reported an internal error ({final['type']}: {final['message']}). "
            "Unless the script wrote to tcopy's channel itself, this is a bug in tcopy; please report it with "
            "the script."
        )
    if state.killed_for == "startup":
        raise TcopyError(f"the worker process did not start the script within {STARTUP_TIMEOUT:g} s (importing torch)")
    if state.info is None:  # died before it started running the script
        raise WorkerInternalError(
            f"internal error (the worker process ended before the run started: {_ending(proc, state)}). "
            "This is a bug in tcopy; please report it with the script."
        )
    step = _failure_step(proc, options, state, state.stack.current)
    emit(printable_record(step) if state.printable else step)
    stopped_by = {"timeout": "timeout", "output": "max_output", "invalid": "invalid"}.get(state.killed_for or "")
    return RunSummary(
        steps=step.index,
        errors=state.errors + 1,
        stopped_by=stopped_by or "crash",
        expected=state.expected,
        missing=state.missing,
    )


def _signal_name(returncode: int | None) -> str | None:
    if returncode is None or returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def _ending(proc: subprocess.Popen[bytes], state: WorkerState) -> str:
    name = _signal_name(proc.returncode)
    tail = state.stderr.decode("utf-8", "replace").strip().splitlines()
    last = f"; it wrote: {tail[-1][:300]}" if tail else ""
    return (f"killed by {name}" if name else f"exit status {proc.returncode}") + last


def _statement_text(source: str, position: wire.Position | None) -> str:
    """The statement's own source (one statement of several on a line; its first line if long)."""
    if position is None:
        return ""
    line, col, end_line, end_col = position
    lines = source.split("\n")
    if not 0 < line <= len(lines):
        return ""
    text = lines[line - 1]
    if end_line == line and 0 <= col < end_col <= len(text.encode("utf-8")):
        return text.encode("utf-8")[col:end_col].decode("utf-8", "replace").strip()
    return text.encode("utf-8")[col:].decode("utf-8", "replace").strip()


def _failure_step(
    proc: subprocess.Popen[bytes], options: WorkerOptions, state: WorkerState, position: wire.Position | None
) -> Step:
    line = position[0] if position is not None else None
    text = _statement_text(state.source, position)
    where = f"at line {line}: `{text}`" if line is not None else "before the first statement"
    from tcopy_cli.explain.errors.crash import Ending, crash_error  # only on a crash: the catalogue is not small

    error = crash_error(
        Ending(
            where=where,
            killed_for=state.killed_for,
            signal=_signal_name(proc.returncode),
            status=_ending(proc, state),
            stderr=bytes(state.stderr),
            timeout=state.timeout,
            max_wire_bytes=options.max_wire_bytes,
            trust=options.trust,
            invalid=state.invalid,
            experiment=state.experiment,
        )
    )
    return Step(
        index=state.steps + 1,
        line=line or 0,
        source=text,
        status="error",
        error=error,
        stdout="",
        warnings=[],
        tensors={},
        arrays={},
        observed=False,
        explanations=[
            Note(
                "process.ended",
                "warning",
                "The process running the script ended, so the tensors after this statement are unknown.",
            )
        ],
    )


__all__ = ["WorkerInternalError", "WorkerOptions", "compare_in_worker", "request", "run_in_worker"]
