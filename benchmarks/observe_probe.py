"""Measure what observing one step allocates, to show large tensors are not copied.

Usage: python benchmarks/observe_probe.py SCRIPT [tcopy run options]

Runs ``tcopy run SCRIPT --format json`` in this process (output discarded), first on a
copy of SCRIPT with every number of 7+ digits replaced by 1000 (a warm-up), then on SCRIPT with
``Observer.snapshot`` wrapped: before each call the kernel's peak-RSS mark is reset
(``/proc/self/clear_refs``) and tracemalloc's peak too; after it, the growth of the
peak over the RSS at entry is what observation itself needed at most (torch's CPU
allocator and the Python heap alike). With ``--device cuda`` it also measures the CUDA
allocator's peak during each call. Prints one JSON line of results.
"""

from __future__ import annotations

import functools
import json
import re
import sys
import tempfile
import tracemalloc
from pathlib import Path
from typing import Any


def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def _reset_peak() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def _run_tcopy(args: list[str]) -> None:
    """Run a script in this process (the patched observer must be the one that runs;
    ``tcopy run`` would run it in a worker process)."""
    from tcopy_cli.pipeline import run_source

    script, options = args[0], args[1:]
    device = options[options.index("--device") + 1] if "--device" in options else "cpu"
    run_source(Path(script).read_text(), device=device, keep_going=True)


def main() -> None:
    import torch

    from tcopy_cli.trace import observe

    peaks: list[float] = []
    heap: list[float] = []
    device_peaks: list[float] = []
    resettable = _reset_peak()
    original = observe.Observer.snapshot

    @functools.wraps(original)
    def snapshot(self: Any, *args: Any, **kwargs: Any) -> Any:
        cuda = torch.cuda.is_available() and torch.cuda.is_initialized()
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            d0 = torch.cuda.memory_allocated()
        _reset_peak()
        before = _status_kb("VmRSS")
        tracemalloc.reset_peak()
        h0 = tracemalloc.get_traced_memory()[0]
        try:
            return original(self, *args, **kwargs)
        finally:
            h1 = tracemalloc.get_traced_memory()[1]
            peaks.append((_status_kb("VmHWM") - before) / 1024)
            heap.append((h1 - h0) / 2**20)
            if cuda:
                torch.cuda.synchronize()
                device_peaks.append((torch.cuda.max_memory_allocated() - d0) / 2**20)

    script, options = sys.argv[1], sys.argv[2:]
    # Warm-up: the same statements on small tensors, so one-time costs (kernels loaded on
    # first use, CUDA context, allocator pools) don't count as observation.
    small = Path(tempfile.mkdtemp(prefix="tcopy-probe-")) / "small.py"
    small.write_text(re.sub(r"\b\d[\d_]{6,}\b", "1000", Path(script).read_text()))
    _run_tcopy([str(small), *options])
    observe.Observer.snapshot = snapshot  # type: ignore[method-assign]
    tracemalloc.start()
    try:
        _run_tcopy([script, *options])
    finally:
        tracemalloc.stop()
    print(
        json.dumps(
            {
                "snapshots": len(peaks),
                "max_step_peak_mb": max(peaks) if resettable and peaks else float("nan"),
                "max_step_tracemalloc_mb": max(heap) if heap else float("nan"),
                "peak_reset_supported": resettable,
                "per_step_peak_mb": [round(p, 1) for p in peaks],
                "max_step_device_peak_mb": max(device_peaks) if device_peaks else None,
            }
        )
    )


if __name__ == "__main__":
    main()
