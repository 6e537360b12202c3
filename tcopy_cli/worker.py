"""The worker process: confine, import torch, run one script, stream records.

Started by ``tcopy_cli.supervise`` as ``python -m tcopy_cli.worker``. Protocol:

- stdin: one JSON object, the request (``supervise.request`` builds it):
  ``{"source", "origin", "device", "keep_going", "max_values", "graph", "limits": {...},
  "trust"}``; or a comparison, ``{"compare": {"expressions", "setup"}, "device", "limits",
  "trust"}`` (``tcopy compare``: every experiment script runs in this one worker); or a
  session (``tcopy repl``), ``{"mode": "session", "device", "limits", "max_values",
  "trust"}`` on its own line, then one line ``{"source", "line_offset"}`` per entered piece
  of code, each run in the same namespace; the session ends at the end of stdin.
- stdout: frames, one JSON object per line (JSON Lines, ASCII, ``\\n``-terminated),
  each with a ``kind``:

  ``start``         ``{"info": RunInfo}`` before the first statement.
  ``running``       ``{"line", "col", "end_line", "end_col"}`` (the statement's position)
                    before a statement or block header runs, unless the parent's stack of
                    running statements (``wire.RunningStack``) has it on top already.
  ``step``          ``{"step": Step}`` after a statement: its facts, not yet explained (the
                    parent runs the explain pass), encoded by ``wire.StepCodec``.
  ``end``           ``{"summary": RunSummary}``: the run finished; the worker exits.
  ``experiment``    ``{"expression", "run"}``: one of ``tcopy compare``'s experiment runs starts
                    (the parent gives each --timeout).
  ``compare``       ``{"rows": [{field: value, ...}, ...]}``: the comparison finished; each row
                    holds every field of a ``trace.compare.Comparison`` by name
                    (``dataclasses.asdict``; the parent reads it with ``decoders.decode_fields``).
  ``done``          ``{"errors"}``: a session's piece of code finished (its steps came before).
  ``rejected``      ``{"info", "line", "column", "message"}``: the script was refused.
  ``usage_error``   ``{"message"}``: e.g. the device is not available.
  ``run_error``     ``{"message"}``: a tcopy error outside any statement.
  ``internal_error`` ``{"type", "message"}``: a bug in tcopy.

  Records (RunInfo, Step, RunSummary) are encoded by ``tcopy_cli.trace.wire``. The
  frames are written to a copy of the original stdout; file descriptor 1 is pointed at
  stderr, so nothing a C library prints can corrupt them.
- stderr: free text (diagnostics, a crash dump from faulthandler), read by the parent.

Unless the request says ``trust``, the worker confines itself (``tcopy_cli.process.confine``)
before importing torch, so torch's and NumPy's threads are confined too; the request's
``allow_read`` paths stay readable. Then CPython runs the script under the engine
(``tcopy_cli.engine``) in every mode: ``trust`` (``tcopy run --trust``) only lifts the wall.
"""

from __future__ import annotations

import faulthandler
import gc
import json
import os
import sys
from typing import Any, BinaryIO

from tcopy_cli.engine.alarm import Uninterrupted

TEST_HOOK_ENV = "TCOPY_ALLOW_TEST_HOOK"
"""The request's ``test_hook`` is honoured only when this variable is ``1`` (tests only)."""


class Channel:
    """Writes frames to the parent."""

    def __init__(self, out: BinaryIO) -> None:
        from tcopy_cli.trace import wire

        self.out = out
        self.line = wire.frame_line
        self.steps = wire.StepCodec()
        self.stack = wire.RunningStack()
        """What the parent's stack of running statements holds, from the frames sent to it."""
        self.held = False
        """A step frame is written but not flushed: the next statement's ``running`` frame takes it along."""

    def send(self, kind: str, **fields: Any) -> None:
        from tcopy_cli.trace import wire

        self.write({"kind": kind, **{k: wire.encode(v) for k, v in fields.items()}})

    def step(self, step: Any, held: bool = False) -> None:
        """A ``step`` frame (tensors unchanged since the last step travel as references). ``held``: the
        frame is flushed with the next one, written right after it (the next statement's ``running``)."""
        with Uninterrupted():
            self.write({"kind": "step", "step": self.steps.encode(step)}, flush=not held)
            self.stack.finished(step.line)

    def write(self, frame: dict[str, Any], flush: bool = True) -> None:
        with Uninterrupted():
            self.out.write(self.line(frame))
            self.held = not flush
            if flush:
                self.out.flush()

    def flush(self) -> None:
        """Send a held step now: no ``running`` frame is coming for it."""
        with Uninterrupted():
            if self.held:
                self.held = False
                self.out.flush()

    def running(self, line: int, col: int, end_line: int, end_col: int) -> None:
        """The ``running`` frame of a statement about to run (sent before every statement: written directly).

        Not sent where the parent has that position on top of its stack already (a loop's
        header at each later turn, ``while True: pass``): it would not push it again.
        """
        position = (line, col, end_line, end_col)
        if self.stack.current == position:
            self.flush()  # (a step held for this frame goes out now: the statement may take long)
            return
        with Uninterrupted():
            self.stack.running(position)
            self.out.write(
                b'{"kind":"running","line":%d,"col":%d,"end_line":%d,"end_col":%d}\n' % (line, col, end_line, end_col)
            )
            self.held = False
            self.out.flush()


def _test_hook(request: dict[str, Any]) -> dict[str, Any] | None:
    hook = request.get("test_hook")
    if hook and os.environ.get(TEST_HOOK_ENV) == "1":
        return dict(hook)
    return None


def _run_hook(code: str, channel: Channel) -> None:
    """TEST ONLY: execute real Python in the (confined) worker; it reports through ``report``."""
    results: dict[str, Any] = {}
    exec(code, {"report": results.__setitem__, "__name__": "tcopy_test_hook"})
    channel.send("hook", result=results)


def _prepare_for_confinement() -> None:
    """Settle, before confinement, what torch's imports would otherwise probe by writing.

    The temporary directory is named without probing it: ``tempfile.gettempdir()``
    proves a directory usable by writing a file in it, which the confined worker can't
    do anywhere, so it raises. torch computes a cache path
    from it when ``torch.optim`` first imports ``torch._dynamo`` (at the first
    optimizer); naming the directory here lets that import work. Nothing is written
    there: the kernel still refuses every write.
    """
    import tempfile

    if tempfile.tempdir is None:
        tempfile.tempdir = os.environ.get("TMPDIR") or "/tmp"
    # The confined worker can start no program, so a search path is of no use to it, and
    # with one, ``ctypes.util.find_library`` (which CUDA builds of torch call while being
    # imported, through cuda.pathfinder) finds gcc and makes a temporary file to run it,
    # which fails. With no search path it finds no compiler and gives up quietly.
    os.environ["PATH"] = ""


def _import_torch_waiting_passively() -> None:
    """Import torch with OpenMP's threads set to sleep, not spin, between parallel regions.

    By default they spin for a while after each one, which costs nothing when a script runs
    alone; here the script shares the cores with tcopy's own work between its operations (and
    the parent drawing steps), and spinning threads take those cores: measured on the
    60-iteration CNN case on a busy 2-core machine, 33 s instead of 13 s. The setting changes
    no result, only how idle threads wait. OpenMP reads it once, as torch loads it; the
    script's environment is left as the user's (a value the user set is kept).
    """
    added = "OMP_WAIT_POLICY" not in os.environ
    if added:
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    try:
        import torch  # noqa: F401
    finally:
        if added:
            del os.environ["OMP_WAIT_POLICY"]


def confined(confinement: str) -> bool:
    """Whether the wall stands: file-system confinement (Landlock) and the system-call filter (seccomp)."""
    parts = confinement.split("+")
    return "landlock" in parts and "seccomp" in parts


def main() -> int:
    """Serve one request; the exit status is 0 whenever a final frame was sent."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    faulthandler.enable(file=sys.stderr, all_threads=False)
    channel = Channel(out)
    request = json.loads(sys.stdin.buffer.readline())
    hook = _test_hook(request)
    if request.get("trust"):
        confinement = "none (--trust)"
        _import_torch_waiting_passively()
    else:
        from tcopy_cli.process import confine

        _prepare_for_confinement()
        readable = [str(p) for p in request.get("allow_read", [])]
        script = request.get("origin")
        if isinstance(script, str) and os.path.isfile(script):
            # The script's own file, which the user handed to tcopy: torch.compile hashes the file
            # a compiled function comes from.
            readable.append(os.path.realpath(script))
        confinement = confine.confine(request.get("device", "cpu"), readable).describe()
        _import_torch_waiting_passively()
        # No directory is writable now. Creating an optimizer imports torch._dynamo, which
        # asks for a cache directory and creates it: name one that exists, and keep
        # tempfile from probing for a writable one.
        import tempfile

        os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.sep)
        tempfile.tempdir = os.sep
        if str(request.get("device", "cpu")).strip().lower() == "cpu":  # GPU drivers: not measured
            from tcopy_cli.limits import Limits
            from tcopy_cli.process import memory

            memory.set_ceiling(int(request.get("limits", {}).get("max_bytes", Limits().max_bytes)))
    if request.get("require_confinement") and not confined(confinement):
        channel.send(
            "run_error",
            message=f"the kernel can't confine the script here (confinement: {confinement}), and "
            "--require-confinement (or TCOPY_REQUIRE_CONFINEMENT=1) asks to refuse then; nothing ran",
        )
        return 0
    try:
        if request.get("mode") == "session":
            return _serve_session(request, channel, confinement)
        if "compare" in request:
            return _serve_compare(request, channel, confinement)
        return _serve(request, channel, confinement, hook)
    except Exception as exc:  # a bug in tcopy itself
        channel.send("internal_error", type=type(exc).__name__, message=str(exc))
        return 0


def _device(request: dict[str, Any], channel: Channel) -> str | None:
    """The request's device, resolved on this machine; None (and a usage_error frame) if unavailable."""
    from tcopy_cli.engine.session import resolve_device
    from tcopy_cli.errors import UsageError

    try:
        return resolve_device(request.get("device", "cpu"))
    except UsageError as exc:
        channel.send("usage_error", message=exc.message)
        return None


def _run_options(request: dict[str, Any], device: str, limits: Any, keep_going: bool, graph: bool) -> Any:
    """RunOptions for the worker (no on_stuck: the parent ends the process)."""
    from tcopy_cli.engine.stepper import RunOptions
    from tcopy_cli.limits import DEFAULT_MAX_VALUES

    return RunOptions(
        device=device,
        limits=limits,
        keep_going=keep_going,
        max_values=int(request.get("max_values", DEFAULT_MAX_VALUES)),
        graph=graph,
    )


def _serve(request: dict[str, Any], channel: Channel, confinement: str, hook: dict[str, Any] | None) -> int:

    import torch

    from tcopy_cli import __version__
    from tcopy_cli.errors import ScriptRejected, TcopyError
    from tcopy_cli.limits import Limits
    from tcopy_cli.program import parse_program
    from tcopy_cli.trace.records import RunInfo

    limits = Limits(**request.get("limits", {}))
    source, origin = request["source"], request["origin"]
    device = request.get("device", "cpu")
    try:
        program = parse_program(source, origin, limits)
    except ScriptRejected as exc:
        info = RunInfo(
            tcopy=__version__, torch=torch.__version__, device=device, source=origin, confinement=confinement
        )
        channel.send("rejected", info=info, line=exc.line, column=exc.column, message=exc.message)
        return 0
    dev = _device(request, channel)
    if dev is None:
        return 0
    options = _run_options(request, dev, limits, bool(request.get("keep_going")), bool(request.get("graph")))
    runner = _worker_runner(program, options, channel, hook)
    channel.send("start", info=_started(runner.info(origin), request, confinement))
    if hook is not None and not hook.get("line"):
        _run_hook(hook["code"], channel)
    # What the imports made (torch and its modules: some 165,000 tracked objects) lives as long as
    # the process: the collector's full passes need not walk it again and again while the
    # script runs (measured: 0.08 s of the 200-iteration MLP case).
    gc.freeze()
    try:
        summary = runner.run()
    except TcopyError as exc:
        channel.send("run_error", message=exc.message)
        return 0
    finally:
        runner.close()
    channel.send("end", summary=summary)
    return 0


def _serve_compare(request: dict[str, Any], channel: Channel, confinement: str) -> int:
    """Run ``tcopy compare``'s experiment scripts here and send the measured rows."""
    import dataclasses

    import torch

    from tcopy_cli import __version__
    from tcopy_cli.errors import ScriptRejected, TcopyError
    from tcopy_cli.limits import Limits
    from tcopy_cli.trace import compare as tc
    from tcopy_cli.trace.records import RunInfo

    limits = Limits(**request.get("limits", {}))
    device = request.get("device", "cpu")
    info = RunInfo(
        tcopy=__version__, torch=torch.__version__, device=device, source="<compare>", confinement=confinement
    )
    dev = _device(request, channel)
    if dev is None:
        return 0
    channel.send("start", info=info)
    job = request["compare"]
    try:
        announce = lambda expression, run: channel.send("experiment", expression=expression, run=run)  # noqa: E731
        rows = tc.compare(list(job["expressions"]), job["setup"], dev, limits, announce)
    except ScriptRejected as exc:
        channel.send("rejected", info=info, line=exc.line, column=exc.column, message=exc.message)
        return 0
    except TcopyError as exc:
        channel.send("run_error", message=exc.message)
        return 0
    channel.send("compare", rows=[dataclasses.asdict(row) for row in rows])
    return 0


def _serve_session(request: dict[str, Any], channel: Channel, confinement: str) -> int:
    """The REPL's worker: run each piece of code read from stdin in one namespace."""

    from tcopy_cli.engine.session import torch_session
    from tcopy_cli.errors import ScriptRejected, TcopyError
    from tcopy_cli.limits import Limits
    from tcopy_cli.program import parse_program
    from tcopy_cli.trace import wire

    limits = Limits(**request.get("limits", {}))
    dev = _device(request, channel)
    if dev is None:
        return 0
    options = _run_options(request, dev, limits, keep_going=True, graph=True)
    runner = _worker_runner(parse_program("", "<repl>", limits), options, channel, None)
    runner.tracer.echo = True  # an expression's value is shown, as Python's REPL does
    channel.send("start", info=_started(runner.info("<repl>"), request, confinement))
    with torch_session(dev):
        for line in sys.stdin.buffer:
            piece = json.loads(line)
            channel.stack = wire.RunningStack()  # the parent starts a stack for each piece
            offset = int(piece.get("line_offset", 0))
            try:
                program = parse_program(piece["source"], "<repl>", limits)
            except ScriptRejected as exc:
                channel.send("refused", line=exc.line, column=exc.column, message=exc.message)
                continue
            program = program.shifted(offset)  # line numbers keep growing across pieces: one script
            try:
                errors = runner.run_more(program)
            except TcopyError as exc:
                channel.send("run_error", message=exc.message)
                return 0
            channel.send("done", errors=errors)
    runner.close()
    return 0


def _started(info: Any, request: dict[str, Any], confinement: str) -> Any:
    """The RunInfo of the ``start`` frame: what confines the script and what it may read."""
    import dataclasses

    trusted = bool(request.get("trust"))
    allowed = [] if trusted else [str(p) for p in request.get("allow_read", [])]
    return dataclasses.replace(info, confinement=confinement, trusted=trusted, allow_read=allowed)


def _worker_runner(program: Any, options: Any, channel: Channel, hook: dict[str, Any] | None) -> Any:
    """A Stepper that announces each statement before it runs and sends each step.

    Steps go out as facts: the parent explains them (on its own core, while this process runs the
    next statement).
    """
    from tcopy_cli.engine.stepper import Stepper

    class WorkerStepper(Stepper):
        def started(self, node: Any, header: bool, frame: Any, where: Any, turns: int) -> None:
            self.next_follows = False
            channel.running(node.lineno, node.col_offset, node.end_lineno or node.lineno, node.end_col_offset or 0)
            if hook is not None and hook.get("line") == node.lineno:
                _run_hook(hook["code"], channel)
            super().started(node, header, frame, where, turns)

        def ended(self, ended: Any) -> None:
            # A step held for the next statement's running frame, where the run stops instead (a limit,
            # an interrupt): the script's ``finally`` blocks and ``__exit__``s run next, and may take
            # long or end the process.
            try:
                super().ended(ended)
            except BaseException:
                channel.flush()
                raise

    stepper = WorkerStepper(program, options, lambda step: channel.step(step, held=stepper.next_follows))
    return stepper


if __name__ == "__main__":
    status = main()
    # Every frame is flushed as it is written. Ending here, without the interpreter's teardown,
    # runs none of the script's atexit handlers or finalizers after its last frame, and lets
    # the process end at once (the parent waits for it, and its resource use then counts as
    # tcopy's, as time(1) reports it).
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)
