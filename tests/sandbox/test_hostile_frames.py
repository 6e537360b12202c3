"""A worker the script took over writes what it likes on the frame pipe: the parent must end
cleanly (a message and exit 1, or a finished run), never hang or pass escape sequences on.

Each test runs the real ``tcopy run`` in a subprocess whose worker, through the test hook,
writes forged frames after its ``start`` frame and exits.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from typing import Any

from tcopy_cli.trace import records, wire
from tcopy_cli.worker import TEST_HOOK_ENV

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

DRIVER = textwrap.dedent(
    """
    import json, sys
    from tcopy_cli import supervise
    frames, script, fmt, extra = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3], sys.argv[4:]
    code = (
        "import gc, os\\n"
        "ch = next(o for o in gc.get_objects() if type(o).__name__ == 'Channel')\\n"
        f"for line in {frames!r}:\\n"
        "    ch.out.write(line.encode() + b'\\\\n')\\n"
        "ch.out.flush()\\n"
        "os._exit(0)\\n"
    )
    request = supervise.request
    def with_hook(source, origin, options):
        return {**request(source, origin, options), "test_hook": {"code": code}}
    supervise.request = with_hook
    sys.argv = ["tcopy", "run", script, "--format", fmt, *extra]
    from tcopy_cli.cli import main
    main()
    """
)


def tensor(**changes: Any) -> records.TensorRecord:
    base = records.TensorRecord(
        shape=[2], dtype="float32", device="cpu", values=[1.0, 1.0], preview="[1., 1.]", data_ptr=1,
        storage="S1", storage_offset=0, shares_memory_with=[], requires_grad=False, is_leaf=True,
        grad_fn=None, grad=None, version=0, version_counter="V1", stride=[1], element_size=4, storage_nbytes=8,
    )  # fmt: skip
    return records.evolve(base, **changes)


def step_frame(index: int = 2, **changes: Any) -> str:
    step = records.Step(
        index=index, line=2, source="x = torch.ones(2)", status="ok", error=None, stdout="", warnings=[],
        tensors={"x": tensor()}, arrays={},
    )  # fmt: skip
    return json.dumps({"kind": "step", "step": wire.encode(records.evolve(step, **changes))})


END = json.dumps({"kind": "end", "summary": wire.encode(records.RunSummary(steps=2, errors=0))})


def tcopy_with_frames(
    frames: list[str], tmp_path: Any, fmt: str = "table", timeout: float = 60, extra: tuple[str, ...] | list[str] = ()
) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "s.py"
    script.write_text("import torch\nx = torch.ones(2)\n")
    (tmp_path / "frames.json").write_text(json.dumps(frames))
    env = dict(os.environ, PYTHONPATH=ROOT, **{TEST_HOOK_ENV: "1"})
    return subprocess.run(
        [sys.executable, "-c", DRIVER, str(tmp_path / "frames.json"), str(script), fmt, *extra],
        capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT,
    )  # fmt: skip


def ended_cleanly(proc: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode in (0, 1), proc.stderr


def test_a_loop_turn_of_infinity_does_not_hang_the_parent(tmp_path: Any) -> None:
    # JSON allows Infinity; folding's ranges double until they pass the turn.
    def turn(index: int, iteration: float) -> str:
        loop = records.LoopContext(line=2, iteration=iteration)  # type: ignore[arg-type]
        return step_frame(index, line=3, source="y = x + 1", loops=(loop,))

    frames = [turn(i, i) for i in range(1, 40)] + [turn(40, float("inf")), END]
    ended_cleanly(tcopy_with_frames(frames, tmp_path))


def test_colliding_set_members_do_not_stall_the_parent(tmp_path: Any) -> None:
    # Every multiple of 2**61 - 1 has the same hash: building a set of them is quadratic.
    # (The frame is written by hand: building that set here would take as long.)
    m = 2**61 - 1
    marker = 987654321
    frame = step_frame(tensors={"x": tensor(reach_ids=frozenset({marker}))})
    frame = frame.replace(f'{{"__frozenset": [{marker}]}}', json.dumps({"__frozenset": list(range(m, m * 100_001, m))}))
    assert "__frozenset" in frame and str(marker) not in frame
    assert len(frame) < 3_000_000  # far below the parent's limit on what a run sends
    ended_cleanly(tcopy_with_frames([frame, END], tmp_path, timeout=30))


def test_escape_sequences_in_a_tensor_record_reach_the_terminal_escaped(tmp_path: Any) -> None:
    frames = [
        step_frame(
            tensors={"x\x1b[31m": tensor(dtype="f\x1b]0;title\x07", device="c\x1b[2Jpu", preview="\x1b[2J[1.]")},
            status="error",
            error=records.ErrorInfo(type="Error\x1b[31m", message="m"),
        ),
        END,
    ]
    for fmt in ("table", "markdown"):
        proc = tcopy_with_frames(frames, tmp_path, fmt)
        ended_cleanly(proc)
        assert "\x1b" not in proc.stdout, (fmt, proc.stdout)
        assert "\x1b" not in proc.stderr, (fmt, proc.stderr)


def test_steps_of_many_new_names_do_not_keep_the_parent_busy_past_the_timeout(tmp_path: Any) -> None:
    # The parent's explain pass on steps the worker sent: 4 steps of 1,500 new names each
    # (under 2 MB of frames) must not keep a run with --timeout 5 going for a minute.
    frames = [step_frame(2 + k, tensors={f"{'ab'[k % 2]}{i}": tensor() for i in range(1500)}) for k in range(4)] + [END]
    assert sum(map(len, frames)) < 2_000_000
    ended_cleanly(tcopy_with_frames(frames, tmp_path, "json", timeout=40, extra=["--timeout", "5"]))


def test_escape_sequences_in_names_stay_escaped_in_folded_lines_and_loop_summaries(tmp_path: Any) -> None:
    name = "w\x1b]0;title\x07"

    def turn(index: int, iteration: int) -> str:
        loop = records.LoopContext(line=2, iteration=iteration, total=4, entry=1)
        return step_frame(index, line=3, source="w.add_(1)", loops=(loop,), tensors={name: tensor(version=iteration)})

    frames = [turn(i + 2, i + 1) for i in range(4)] + [END]
    for fmt in ("table", "markdown"):
        proc = tcopy_with_frames(frames, tmp_path, fmt)
        ended_cleanly(proc)
        assert "\x1b" not in proc.stdout and "\x1b" not in proc.stderr, (fmt, proc.stdout)
        assert "\\x1b" in proc.stdout  # the name is there, escaped
