"""Why the process running the script stopped before the script ended: what tcopy says about a
crash, a signal, a limit it enforced or a record it refused (the parent measures, this explains)."""

from __future__ import annotations

from dataclasses import dataclass

from tcopy_cli.trace.records import ErrorInfo

SIGNAL_WHY = {
    "SIGKILL": "was killed (SIGKILL), usually because the system ran out of memory",
    "SIGXCPU": "used more CPU time than --timeout allows (RLIMIT_CPU)",
    "SIGXFSZ": "tried to write a file (RLIMIT_FSIZE)",
}
HARD_FAULTS = ("SIGSEGV", "SIGFPE", "SIGBUS", "SIGILL", "SIGABRT")


@dataclass(frozen=True)
class Ending:
    """What the parent measured about a worker that stopped early."""

    where: str  # "at line N: `statement`" or "before the first statement"
    killed_for: str | None  # why tcopy stopped it (timeout, output, invalid), or None
    signal: str | None  # the signal that ended it (SIGSEGV), or None
    status: str  # its exit status or signal and the last line it wrote to stderr, in words
    stderr: bytes
    timeout: float
    max_wire_bytes: int
    trust: bool
    invalid: str | None = None
    experiment: tuple[str, str] | None = None


def culprit(stderr: bytes) -> str:
    """Which C library was running, from the faulthandler dump (innermost frame first)."""
    text = stderr.decode("utf-8", "replace")
    for entry in text.splitlines():
        if "File " in entry:
            if "/numpy/" in entry:
                return "NumPy"
            if "/torch/" in entry:
                return "PyTorch"
            break
    return "PyTorch"


def crash_error(e: Ending) -> ErrorInfo:
    """The error a step shows for a process that stopped early."""
    where, name = e.where, e.signal
    if e.killed_for == "timeout" and e.experiment is not None:
        expression, run = e.experiment
        kind = "TimeoutExceeded"
        message = (
            f"the experiment on `{expression}` ({run}) took longer than {e.timeout:g} s (limit --timeout), "
            "so tcopy stopped the process"
        )
        explanation = "The setup or the expression kept running past the time limit. Raise --timeout or shorten it."
    elif e.killed_for == "invalid":
        kind = "InvalidRecord"
        message = f"the worker sent an invalid record {where} ({e.invalid}); tcopy stopped the process"
        explanation = (
            "The process running the script wrote something on tcopy's channel that is not a record tcopy "
            "sends: a script that writes there itself, or a bug. The steps before are as that process sent them."
        )
    elif e.killed_for == "timeout":
        kind = "TimeoutExceeded"
        message = (
            f"the run took longer than {e.timeout:g} s (limit --timeout); the statement {where} did not "
            "return, so tcopy stopped the process"
        )
        explanation = "A single operation kept running past the time limit. Raise --timeout or make it smaller."
    elif e.killed_for == "output":
        kind = "LimitExceeded"
        message = f"the run sent more than {e.max_wire_bytes:,} bytes of records {where}; tcopy stopped the process"
        explanation = "The steps, notes or printed text were too large to show."
    elif name in HARD_FAULTS:
        kind = "ProcessCrashed"
        if e.trust:  # real Python: the script's own code or any library it called may have done it
            message = f"the process crashed with {name} {where} (--trust: real Python ran the script)"
        else:
            library = culprit(e.stderr)
            inside = "torch" if library == "PyTorch" else "NumPy"
            message = (
                f"the process crashed with {name} inside {inside} {where}: a failure in {library}'s C code, not a "
                "Python error in your script"
            )
        explanation = (
            "The statement made a C library fail hard. tcopy ran the script in a separate process, so it can "
            "report this; the script's later statements did not run."
        )
    elif name is not None:
        kind = "ProcessCrashed"
        message = f"the process {SIGNAL_WHY.get(name, f'was ended by {name}')} {where}"
        explanation = "The script's later statements did not run."
    else:
        kind = "ProcessCrashed"
        message = f"the process ended unexpectedly ({e.status}) {where}"
        explanation = "The script's later statements did not run."
    return ErrorInfo(type=kind, message=message, explanation=explanation, explained=True)


__all__ = ["Ending", "crash_error", "culprit"]
