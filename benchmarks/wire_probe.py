"""Per-step cost of the worker pipe, without process start-up: encode, frame, decode.

Runs a script in-process, then times what the worker and the parent add per step:
``StepCodec.encode`` + ``wire.frame_line`` (worker) and ``frames.FrameDecoder.decode`` (the
parent's strict decoder: size, JSON, schema, references, plain text), and the bytes per step.
Compare with case 5 of benchmarks/run.py, which measures the
whole run through the worker.

    python benchmarks/wire_probe.py
"""

from __future__ import annotations

import statistics
import time

from tcopy_cli.trace import frames, run_source, wire

SCRIPTS = {
    "5 small tensors (case 5's loop body)": (
        "a = torch.ones(3, requires_grad=True)\nb = a * 2\nc = b.sum()\nd = torch.zeros(4)\ne = d + 1\n"
        "for i in range(200):\n    e = e + i\n"
    ),
    "one 100-element tensor with values": "t = torch.arange(100.0)\nfor i in range(200):\n    t = t + 1\n",
    "2,500 tensors in one list": "xs = [torch.ones(1) for _ in range(2500)]\n",
}


def main() -> None:
    for name, src in SCRIPTS.items():
        trace = run_source(src, max_values=100)
        steps = trace.steps
        lines = []
        sender, receiver = wire.StepCodec(), frames.FrameDecoder()
        t0 = time.perf_counter()
        for s in steps:
            lines.append(wire.frame_line({"kind": "step", "step": sender.encode(s)})[:-1])
        t1 = time.perf_counter()
        for line in lines:
            receiver.decode(line)
        t2 = time.perf_counter()
        size = statistics.mean(len(x) for x in lines)
        n = len(steps)
        print(
            f"{name}: {n} steps, worker {1e3 * (t1 - t0) / n:.3f} ms/step, parent {1e3 * (t2 - t1) / n:.3f} ms/step, "
            f"{size:,.0f} bytes/step"
        )


if __name__ == "__main__":
    main()
