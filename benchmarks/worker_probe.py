"""What the worker spends per step, in-process: run a case script as the worker does, frames to /dev/null.

No parent, no start-up: the interpreter, observing, encoding and writing each step's
frames (the parent explains the steps). Prints CPU milliseconds per step (process time; on a busy machine wall
time mostly measures waiting for a core). ``--no-send`` leaves out encoding and writing
the step frames. The probe runs unconfined (the wall's cost is one filtered ``write`` a step).

    python benchmarks/worker_probe.py benchmarks/cases/loop_4000.py
"""

from __future__ import annotations

import gc
import os
import sys
import time
from typing import Any

from tcopy_cli import worker
from tcopy_cli.limits import Limits
from tcopy_cli.program import parse_program


class _Channel(worker.Channel):
    def __init__(self, send: bool) -> None:
        super().__init__(open(os.devnull, "wb"))  # noqa: SIM115 - lives as long as the probe
        self.sending = send

    def write(self, frame: dict[str, Any]) -> None:
        if self.sending:
            super().write(frame)

    def step(self, step: Any) -> None:
        if self.sending:
            super().step(step)


def main() -> None:
    path = next(a for a in sys.argv[1:] if not a.startswith("--"))
    limits = Limits(max_steps=1_000_000)
    with open(path) as fh:
        program = parse_program(fh.read(), path, limits)
    options = worker._run_options({}, "cpu", limits, False, False)
    runner = worker._worker_runner(program, options, _Channel("--no-send" not in sys.argv), None)
    gc.freeze()  # as the worker does before the run: the collector's passes skip what the imports made
    cpu = time.process_time()
    summary = runner.run()
    cpu = time.process_time() - cpu
    print(f"{summary.steps} steps, {cpu:.2f} s CPU: {cpu / max(summary.steps, 1) * 1000:.3f} ms/step")


if __name__ == "__main__":
    main()
