"""Where a step's time goes inside the worker: CPU time of each stage of ending a step, per call.

Runs ``worker_probe.py`` on SCRIPT with the stages below wrapped by a process-time timer.
cProfile cannot see them: they run inside the ``settrace`` callback, where CPython turns
profiling off. Nested stages are included in their callers' time (``Stepper.ended`` holds
``Stepper._snapshot``, which holds ``Observer.snapshot``); what the recorder and the trace of
library calls cost is the rest of the run's CPU time.

    python benchmarks/step_split_probe.py benchmarks/cases/loop_4000.py
"""

from __future__ import annotations

import collections
import functools
import runpy
import sys
import time
from pathlib import Path
from typing import Any

from tcopy_cli import worker
from tcopy_cli.engine import bindings, stepper, tracer
from tcopy_cli.trace import observe

TOTAL: collections.Counter[str] = collections.Counter()
CALLS: collections.Counter[str] = collections.Counter()
STAGES = [
    (stepper.Stepper, "ended"),
    (stepper.Stepper, "_pop_ops"),
    (stepper.Stepper, "_snapshot"),
    (stepper.Stepper, "started"),
    (observe.Observer, "snapshot"),
    (tracer.Tracer, "_begin"),
    (tracer.Tracer, "_where"),
    (tracer.Tracer, "names"),
    (worker.Channel, "step"),
    (bindings, "statement_ops"),
    (bindings, "targets"),
]


def _timed(owner: Any, name: str) -> None:
    inner = getattr(owner, name)
    label = f"{getattr(owner, '__name__', owner)}.{name}".removeprefix("tcopy_cli.engine.")

    @functools.wraps(inner)
    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return inner(*args, **kwargs)
        finally:
            TOTAL[label] += time.process_time() - start
            CALLS[label] += 1

    setattr(owner, name, timed)


def main() -> None:
    for owner, name in STAGES:
        _timed(owner, name)
    sys.argv = ["worker_probe.py", *sys.argv[1:]]
    runpy.run_path(str(Path(__file__).with_name("worker_probe.py")), run_name="__main__")
    for label, total in TOTAL.most_common():
        print(f"{label:26s} {total / CALLS[label] * 1e6:8.1f} µs/call  {CALLS[label]:7d} calls  {total:6.3f} s")


if __name__ == "__main__":
    main()
