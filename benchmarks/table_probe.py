"""What drawing one step table costs, in-process, without the run itself.

Runs the case scripts through the Python API (explained, like the command line), then
draws every step with the table renderer on a 120-column console writing to memory (as
to a file: no colours) and times each step, in CPU time of this thread (on a busy
machine wall time mostly measures waiting for a core). Prints the median milliseconds
per step of each case as the last line (JSON), which benchmarks/run.py reads (case 9);
``--wall`` times wall-clock instead.

    python benchmarks/table_probe.py
"""

from __future__ import annotations

import io
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console

from tcopy_cli import run_script
from tcopy_cli.render.table import TableRenderer

CASES = Path(__file__).resolve().parent / "cases"


def per_step_ms(name: str, clock: Callable[[], float] = time.thread_time) -> float:
    trace = run_script((CASES / f"{name}.py").read_text())
    console = Console(file=io.StringIO(), width=120, highlight=False, soft_wrap=False)
    renderer = TableRenderer(console)
    renderer.start(trace.info)
    times = []
    for step in trace.steps:
        t0 = clock()
        renderer.step(step)
        times.append(clock() - t0)
    return statistics.median(times) * 1000


def main() -> None:
    clock = time.perf_counter if "--wall" in sys.argv else time.thread_time
    result = {name: round(per_step_ms(name, clock), 4) for name in ("loop_4000", "mlp_train")}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
