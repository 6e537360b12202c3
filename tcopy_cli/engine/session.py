"""The torch session a run happens in: the device (resolved on this machine and made the default for
tensor creation), torch's global state restored afterwards, and the wall-clock watchdog."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any

import torch

from tcopy_cli.engine.alarm import Uninterrupted
from tcopy_cli.errors import UsageError
from tcopy_cli.limits import Limits

HARD_TIMEOUT_GRACE = 5.0
"""Seconds the hard watchdog waits past --timeout for a single C operation to return before it ends the
process (Python cannot interrupt code running inside torch)."""


def available_devices() -> list[str]:
    """Devices this machine can run on, e.g. ['cpu', 'cuda:0']."""
    devices = ["cpu"]
    if torch.cuda.is_available():
        devices += [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        devices.append("mps")
    return devices


def resolve_device(spec: str) -> str:
    """Normalise --device (cpu, cuda, cuda:N, mps, auto); UsageError if unavailable."""
    spec = spec.strip().lower()
    available = available_devices()
    if spec == "auto":
        for prefix in ("cuda", "mps"):
            for dev in available:
                if dev.startswith(prefix):
                    return dev
        return "cpu"
    if spec == "cuda":
        spec = f"cuda:{torch.cuda.current_device()}" if torch.cuda.is_available() else "cuda:0"
    if spec == "mps:0":
        spec = "mps"
    if spec not in available:
        try:
            torch.device(spec)
        except RuntimeError:
            raise UsageError(f"'{spec}' is not a device name; use cpu, cuda, cuda:N, mps or auto") from None
        raise UsageError(f"device '{spec}' is not available on this machine; available: {', '.join(available)}")
    return spec


@contextlib.contextmanager
def torch_session(device: str) -> Iterator[None]:
    """Make ``device`` the default for tensor creation; restore torch's global state after."""
    grad = torch.is_grad_enabled()
    dtype = torch.get_default_dtype()
    anomaly = torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()
    print_options = dict(vars(torch._tensor_str.PRINT_OPTS))  # a script may call torch.set_printoptions
    # and torch.set_default_device, whose mode would stay on the process's stack (torch < 2.3 has no
    # get_default_device: the CPU is taken as the default there)
    default = getattr(torch, "get_default_device", lambda: torch.device("cpu"))()
    if device != "cpu":
        torch.set_default_device(device)
    try:
        yield
    finally:
        torch.set_default_device(None if default.type == "cpu" else default)
        torch.set_grad_enabled(grad)
        torch.set_default_dtype(dtype)
        torch.set_anomaly_enabled(*anomaly)
        for name, value in print_options.items():
            setattr(torch._tensor_str.PRINT_OPTS, name, value)


@contextlib.contextmanager
def watchdog(
    seconds: float, describe: Callable[[], str], on_stuck: Callable[[str], None] | None = None
) -> Iterator[None]:
    """--timeout: an interval timer interrupts Python code; a thread reports a stuck C call.

    SIGALRM raises TimeoutExceeded between Python bytecodes, which covers loops and
    everything tcopy itself does. A single torch operation running in C can't be
    interrupted; if the process is still busy ``HARD_TIMEOUT_GRACE`` seconds later, the
    watchdog thread calls ``on_stuck`` with a message (the command line reports it and
    ends the process; the Python API passes nothing and never ends it).
    """
    if seconds <= 0:
        yield
        return
    use_signal = threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")
    done = threading.Event()

    def hard_stop(report: Callable[[str], None]) -> None:
        if not done.wait(seconds + HARD_TIMEOUT_GRACE):
            report(
                f"timed out after {seconds:g} s (--timeout) in {describe()}; a single "
                "operation did not return, so tcopy stopped the process."
            )

    if on_stuck is not None:
        threading.Thread(target=hard_stop, args=(on_stuck,), name="tcopy-watchdog", daemon=True).start()
    previous: Any = None
    if use_signal:

        def on_alarm(_sig: int, _frame: Any) -> None:
            exc = Limits(timeout=seconds).exceeded("timeout", "the run took longer than the limit")
            if Uninterrupted.depth:
                Uninterrupted.pending = exc
                return
            raise exc

        previous = signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        if use_signal:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        done.set()
