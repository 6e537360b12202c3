"""A worker the script took over writes what it likes on the frame pipe: the parent must end
cleanly, never hang, crash ("internal error") or pass escape sequences on, and never exit 0
for a run whose frames stop before the script's end.

Each test runs the real ``tcopy run`` in a subprocess whose worker, through the test hook,
writes forged bytes on the frame pipe after its ``start`` frame (real Python in the confined
worker: it finds the channel as a script would), and exits. Anything that is not a frame
the worker sends, or a frame out of order, is an error step "the worker sent an invalid
record" (exit status 1) and the worker is stopped.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from typing import Any

import pytest
from cli_runs import environ, python

from tcopy_cli.trace import records, wire
from tcopy_cli.worker import TEST_HOOK_ENV

pytestmark = pytest.mark.e2e  # through the real command line and worker

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The hook writes ``chunks`` (strings of bytes, as latin-1) on the channel, flushing after each
# and pausing where a chunk is a number (so the parent reads a frame in pieces), then exits; or
# runs ``code`` (real Python) with ``ch`` the channel.
DRIVER = textwrap.dedent(
    """
    import json, sys
    from tcopy_cli import supervise
    spec, script, fmt, extra = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3], sys.argv[4:]
    code = (
        "import gc, os, time\\n"
        "ch = next(o for o in gc.get_objects() if type(o).__name__ == 'Channel')\\n"
        + spec.get("code", "")
        + f"\\nfor chunk in {spec.get('chunks', [])!r}:\\n"
        "    if isinstance(chunk, (int, float)):\\n"
        "        time.sleep(chunk)\\n"
        "        continue\\n"
        "    ch.out.write(chunk.encode('latin-1'))\\n"
        "    ch.out.flush()\\n"
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

SCRIPT = "import torch\nx = torch.ones(2)\n"


def tensor(**changes: Any) -> records.TensorRecord:
    base = records.TensorRecord(
        shape=[2], dtype="float32", device="cpu", values=[1.0, 1.0], preview="[1., 1.]", data_ptr=1,
        storage="S1", storage_offset=0, shares_memory_with=[], requires_grad=False, is_leaf=True,
        grad_fn=None, grad=None, version=0, version_counter="V1", stride=[1], element_size=4, storage_nbytes=8,
    )  # fmt: skip
    return records.evolve(base, **changes)


def step_frame(index: int = 1, **changes: Any) -> str:
    step = records.Step(
        index=index, line=2, source="x = torch.ones(2)", status="ok", error=None, stdout="", warnings=[],
        tensors={"x": tensor()}, arrays={},
    )  # fmt: skip
    return wire.frame_line({"kind": "step", "step": wire.encode(records.evolve(step, **changes))}).decode("latin-1")


def running(line: int, col: int = 0) -> str:
    return json.dumps({"kind": "running", "line": line, "col": col, "end_line": line, "end_col": 1}) + "\n"


def end(steps: int = 1, errors: int = 0) -> str:
    return json.dumps({"kind": "end", "summary": wire.encode(records.RunSummary(steps=steps, errors=errors))}) + "\n"


def tcopy_with(
    spec: dict[str, Any],
    tmp_path: Any,
    fmt: str = "table",
    timeout: float = 120,
    extra: tuple[str, ...] | list[str] = (),
    script: str = SCRIPT,
) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "s.py"
    path.write_text(script)
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    env = environ(PYTHONPATH=ROOT, **{TEST_HOOK_ENV: "1"})
    return python(
        "-c", DRIVER, str(tmp_path / "spec.json"), str(path), fmt, *extra,
        timeout=timeout, env=env, cwd=ROOT, errors="surrogateescape",
    )  # fmt: skip


def tcopy_with_frames(
    frames: list[Any], tmp_path: Any, fmt: str = "table", **kw: Any
) -> subprocess.CompletedProcess[str]:
    lines = [f if isinstance(f, (int, float)) or f.endswith("\n") else f + "\n" for f in frames]
    return tcopy_with({"chunks": lines}, tmp_path, fmt, **kw)


def ended_cleanly(proc: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "internal error" not in proc.stderr and "bug in tcopy" not in proc.stderr, proc.stderr
    assert proc.returncode in (0, 1), proc.stderr


def refused_as_invalid(proc: subprocess.CompletedProcess[str], what: str = "") -> None:
    """Exit 1, an error step that says the worker sent an invalid record (and what), nothing raw."""
    ended_cleanly(proc)
    assert proc.returncode == 1, (proc.stdout[-2000:], proc.stderr)
    said = proc.stdout + proc.stderr  # the error step (stdout), its headline (stderr) where it is the first
    assert "the worker sent an invalid record" in said, (proc.stdout[-2000:], proc.stderr)
    assert what in said, (proc.stdout[-2000:], proc.stderr)
    for text in (proc.stdout, proc.stderr):
        assert "\x1b" not in text and "\x9b" not in text, text[-2000:]


# --- what the issue found: each once ended as "internal error" ---------------------------

GARBAGE = {
    "not JSON": ("hello, parent", "not JSON"),
    "JSON of the wrong shape": ("[1, 2, 3]", "a frame is an object"),
    "nested 200,000 deep": ("[" * 200_000 + "]" * 200_000, "not JSON"),
    "a 5,000-digit number": ('{"kind": "running", "line": ' + "9" * 5000 + ', "col": 0, "end_line": 1}', ""),
    "a 5,000-digit number in a step": (step_frame().replace('"x = torch.ones(2)",', '"x",' + "9" * 5000 + ","), ""),
    "an unknown kind": ('{"kind": "launch", "missiles": true}', "unknown frame kind"),
    "a missing field": ('{"kind": "running", "line": 2}', "without col"),
    "an extra field": ('{"kind": "done", "errors": 0, "evil": 1}', ""),
    "a float where an int belongs": ('{"kind": "running", "line": 2.0, "col": 0, "end_line": 2, "end_col": 1}', ""),
    "a bool where an int belongs": (step_frame().replace('{"__r":["Step",1,', '{"__r":["Step",true,', 1), "Step.index"),
    "a record of another class": (step_frame().replace('"TensorRecord"', '"RunInfo"', 1), "TensorRecord"),
    "a step with a field too few": (step_frame().replace('"Step",1,2,', '"Step",1,', 1), "fields"),
    "a NaN literal": ('{"kind": "hook", "result": NaN}', "not JSON"),
    "a second start frame": (
        json.dumps({"kind": "start", "info": wire.encode(records.RunInfo("0", "0", "cpu", "x"))}),
        "a second start frame",
    ),
    "a frame of another command": ('{"kind": "done", "errors": 0}', "a done frame from a run worker"),
    "invalid UTF-8": ('{"kind": "usage_error", "message": "\xff\xfe"}', "not JSON"),
}


@pytest.mark.parametrize("name", list(GARBAGE))
def test_a_frame_that_is_not_one_is_an_invalid_record(name: str, tmp_path: Any) -> None:
    line, what = GARBAGE[name]
    proc = tcopy_with_frames([line], tmp_path)
    refused_as_invalid(proc, what)
    assert "1 step, 1 error" in proc.stdout  # the error step, in the table


def test_an_invalid_record_in_json_mode_is_an_error_step(tmp_path: Any) -> None:
    proc = tcopy_with_frames([step_frame(), "[" * 200_000], tmp_path, "json")
    ended_cleanly(proc)
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [e["event"] for e in events] == ["start", "step", "step", "end"]
    assert events[2]["status"] == "error" and events[2]["error"]["type"] == "InvalidRecord"
    assert events[-1] == {"event": "end", "status": "error", "steps": 2, "errors": 1}
    assert proc.returncode == 1


def test_a_step_numbered_out_of_order_is_invalid(tmp_path: Any) -> None:
    refused_as_invalid(tcopy_with_frames([step_frame(1), step_frame(3)], tmp_path), "step 3 after step 1")
    refused_as_invalid(tcopy_with_frames([step_frame(1), step_frame(1)], tmp_path), "step 1 after step 1")
    refused_as_invalid(tcopy_with_frames([step_frame(2)], tmp_path), "step 2 after step 0")


def test_a_valid_frame_then_garbage(tmp_path: Any) -> None:
    proc = tcopy_with_frames([running(2), step_frame(1), "\x00\x01garbage\x1b[2J"], tmp_path)
    refused_as_invalid(proc, "not JSON")
    assert "2 steps, 1 error" in proc.stdout


def test_frames_split_across_reads_and_interleaved_are_read_as_frames(tmp_path: Any) -> None:
    """A frame written in pieces (the parent reads one piece at a time) is one frame; two frames in
    one write are two."""
    first, second = step_frame(1), step_frame(2, line=3, source="y = 1")
    chunks = [running(2)[:5], 0.2, running(2)[5:] + first[:100], 0.2, first[100:-40], 0.2, first[-40:] + running(3)]
    chunks += [second[:7], 0.2, second[7:] + end(2)]
    proc = tcopy_with({"chunks": chunks}, tmp_path, "json", script=SCRIPT + "y = 1\n")
    ended_cleanly(proc)
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [e["event"] for e in events] == ["start", "step", "step", "end"], proc.stderr
    assert events[-1]["status"] == "ok" and proc.returncode == 0


def test_a_line_longer_than_a_frame_may_be_is_refused_before_it_ends(tmp_path: Any) -> None:
    # 600 MB without a newline: refused at 64 MiB, not read to the end (nor to the run's 512 MiB).
    code = "for _ in range(600):\n    ch.out.write(b'x' * 2**20)\n"
    proc = tcopy_with({"code": code}, tmp_path, timeout=120)
    refused_as_invalid(proc, "a frame of more than 67,108,864 bytes")


def test_600_mb_of_valid_frames_end_at_the_output_limit(tmp_path: Any) -> None:
    # Steps of a 30 MB warning each: valid frames, until the run's 512 MiB of output. (Printed text
    # past --max-output is refused before: test_steps_that_printed_more_than_max_output_are_invalid.)
    code = (
        "import json\n"
        "from tcopy_cli.trace import records, wire\n"
        "for i in range(20):\n"
        "    s = records.Step(index=i + 1, line=2, source='x', status='ok', error=None, stdout='',\n"
        "                     warnings=['a' * 30_000_000], tensors={}, arrays={})\n"
        "    ch.out.write(wire.frame_line({'kind': 'step', 'step': wire.encode(s)}))\n"
    )
    proc = tcopy_with({"code": code}, tmp_path, "json", timeout=300)
    ended_cleanly(proc)
    assert proc.returncode == 1
    last = json.loads(proc.stdout.splitlines()[-2])
    assert last["error"]["type"] == "LimitExceeded" and "bytes of records" in last["error"]["message"]


def test_a_name_10_mb_long(tmp_path: Any) -> None:
    name = "n" * 10_000_000
    proc = tcopy_with_frames([running(2), step_frame(1, tensors={name: tensor()}), end(1)], tmp_path, "json")
    ended_cleanly(proc)
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert list(events[1]["tensors"]) == [name]


def test_steps_that_printed_more_than_max_output_are_invalid(tmp_path: Any) -> None:
    """The worker cuts printed text at --max-output: 15 MB of it in one frame was drawn for two minutes."""
    printed = "line\n" * 250_000
    proc = tcopy_with_frames([running(2), step_frame(1, stdout=printed), end(1)], tmp_path)
    refused_as_invalid(proc, "more than --max-output (1,000,000 characters)")


# --- the run's summary is the parent's -----------------------------------------------------

FIVE = "import torch\na = torch.ones(2)\nb = a + 1\nc = b * 2\nd = c.sum()\n"


def test_a_forged_end_before_the_last_statement_does_not_exit_0(tmp_path: Any) -> None:
    # After step 2 of a 5-statement script, an end frame whose counts match what was sent.
    steps = [running(1), step_frame(1, line=1, source="import torch"), running(2), step_frame(2, line=2)]
    proc = tcopy_with_frames([*steps, end(2)], tmp_path, script=FIVE)
    refused_as_invalid(proc, "before the script's last statement (line 5)")
    # ... also in JSON, where the forged end would have been the last line
    proc = tcopy_with_frames([*steps, end(2)], tmp_path, "json", script=FIVE)
    assert proc.returncode == 1
    assert json.loads(proc.stdout.splitlines()[-1]) == {"event": "end", "status": "error", "steps": 3, "errors": 1}


def test_an_end_whose_counts_disagree_is_invalid(tmp_path: Any) -> None:
    frames = [running(2), step_frame(1, status="error", error=records.ErrorInfo("E", "m"))]
    refused_as_invalid(tcopy_with_frames([*frames, end(1, errors=0)], tmp_path), "an end frame of 1 steps, 0 errors")
    refused_as_invalid(tcopy_with_frames([running(2), step_frame(1), end(5)], tmp_path), "an end frame of 5 steps")


def test_an_end_after_the_last_statement_with_matching_counts_is_the_runs_end(tmp_path: Any) -> None:
    proc = tcopy_with_frames([running(2), step_frame(1), end(1)], tmp_path)
    ended_cleanly(proc)
    assert proc.returncode == 0 and "1 step, 0 errors" in proc.stdout, proc.stderr


def test_an_error_step_may_end_a_run_early(tmp_path: Any) -> None:
    # Without --keep-going a run stops at its first error: an early end then exits 1 anyway.
    frames = [running(2), step_frame(1, line=2, status="error", error=records.ErrorInfo("E", "m")), end(1, 1)]
    proc = tcopy_with_frames(frames, tmp_path, script=FIVE)
    ended_cleanly(proc)
    assert proc.returncode == 1 and "invalid record" not in proc.stderr and "E: m" in proc.stderr


# --- what was found before, kept -----------------------------------------------------------


def test_a_loop_turn_of_infinity_does_not_hang_the_parent(tmp_path: Any) -> None:
    # JSON allows 1e999 in no parser here; a huge float turn is refused where an int belongs.
    def turn(index: int, iteration: Any) -> str:
        loop = records.LoopContext(line=2, iteration=iteration)
        return step_frame(index, line=3, source="y = x + 1", loops=(loop,))

    frames = [turn(i, i) for i in range(1, 40)] + [turn(40, 1e300), end(40)]
    refused_as_invalid(tcopy_with_frames(frames, tmp_path), "LoopContext.iteration")


def test_colliding_set_members_do_not_stall_the_parent(tmp_path: Any) -> None:
    # Every multiple of 2**61 - 1 has the same hash: building a set of them is quadratic.
    # (The frame is written by hand: building that set here would take as long.)
    m = 2**61 - 1
    marker = 987654321
    frame = step_frame(tensors={"x": tensor(reach_ids=frozenset({marker}))})
    frame = frame.replace(f'{{"__frozenset":[{marker}]}}', json.dumps({"__frozenset": list(range(m, m * 100_001, m))}))
    assert "__frozenset" in frame and str(marker) not in frame
    assert len(frame) < 3_000_000  # far below the parent's limit on what a run sends
    refused_as_invalid(tcopy_with_frames([frame, end()], tmp_path, timeout=30), "float")


def test_escape_sequences_in_a_tensor_record_reach_the_terminal_escaped(tmp_path: Any) -> None:
    frames = [
        running(2),
        step_frame(
            tensors={"x\x1b[31m": tensor(dtype="f\x1b]0;title\x07", device="c\x1b[2Jpu", preview="\x1b[2J[1.]")},
            status="error",
            error=records.ErrorInfo(type="Error\x1b[31m", message="m\x9b2J"),
        ),
        end(1, 1),
    ]
    for fmt in ("table", "markdown"):
        proc = tcopy_with_frames(frames, tmp_path, fmt)
        ended_cleanly(proc)
        assert "\x1b" not in proc.stdout and "\x9b" not in proc.stdout, (fmt, proc.stdout)
        assert "\x1b" not in proc.stderr and "\x9b" not in proc.stderr, (fmt, proc.stderr)
        assert "Error\\x1b[31m: m\\x9b2J" in proc.stderr


def test_steps_of_many_new_names_do_not_keep_the_parent_busy_past_the_timeout(tmp_path: Any) -> None:
    # The parent's explain pass on steps the worker sent: 4 steps of 1,500 new names each
    # (under 2 MB of frames) must not keep a run with --timeout 5 going for a minute.
    frames = [step_frame(1 + k, tensors={f"{'ab'[k % 2]}{i}": tensor() for i in range(1500)}) for k in range(4)]
    assert sum(map(len, frames)) < 2_000_000
    ended_cleanly(tcopy_with_frames([*frames, end(4)], tmp_path, "json", timeout=40, extra=["--timeout", "5"]))


def test_escape_sequences_in_names_stay_escaped_in_folded_lines_and_loop_summaries(tmp_path: Any) -> None:
    name = "w\x1b]0;title\x07"

    def turn(index: int, iteration: int) -> str:
        loop = records.LoopContext(line=2, iteration=iteration, total=4, entry=1)
        return step_frame(index, line=3, source="w.add_(1)", loops=(loop,), tensors={name: tensor(version=iteration)})

    frames = [turn(i + 1, i + 1) for i in range(4)] + [end(4)]
    for fmt in ("table", "markdown"):
        proc = tcopy_with_frames(frames, tmp_path, fmt)
        ended_cleanly(proc)
        assert "\x1b" not in proc.stdout and "\x1b" not in proc.stderr, (fmt, proc.stdout)
        assert "\\x1b" in proc.stdout  # the name is there, escaped


def test_a_forged_final_frame_ends_the_run_as_what_it_says_never_0(tmp_path: Any) -> None:
    """The worker's own final frames stay a worker's word: an internal error it reports is said to
    come from the worker (escaped), a usage error exits 2; neither is a crash of tcopy or an exit 0."""
    proc = tcopy_with_frames(['{"kind": "internal_error", "type": "E\\u001b[2J", "message": "m\\u009b"}'], tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "the worker process reported an internal error (E\\x1b[2J: m\\x9b)" in proc.stderr, proc.stderr
    proc = tcopy_with_frames(['{"kind": "usage_error", "message": "no \\u001b]0;t\\u0007"}'], tmp_path)
    assert proc.returncode == 2 and "tcopy: no \\x1b]0;t\\x07" in proc.stderr, proc.stderr
