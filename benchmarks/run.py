"""Time tcopy against plain Python on the same scripts and check the performance goals.

Not part of the test suite. Every timed command is a fresh process (wall time measured
here from spawn to exit, peak RSS from the kernel's rusage for that one child), so
interpreter start-up and ``import torch`` count on both sides. In each repetition the
commands of one case run back to back in a rotating order (tcopy first, then python
first, ...), so slow drift of a busy machine hits both sides alike; the table reports
medians over the repetitions.

    python benchmarks/run.py                 # full run (3 repetitions, ~9 min on 2 cores)
    python benchmarks/run.py --quick         # 1 repetition
    python benchmarks/run.py --python /path/to/venv/bin/python --cases 1,4,5

Results go to stdout and, between the markers, to benchmarks/RESULTS.md (with the exact
command). Profiles of the big cases: ``python benchmarks/profile_case.py large|many``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CASES = HERE / "cases"
RESULTS = HERE / "RESULTS.md"
BEGIN, END = "<!-- results:begin (written by benchmarks/run.py) -->", "<!-- results:end -->"

# Goals (from the performance issue).
GOAL_STARTUP_S = 0.2  # case 1: tcopy --help/--version/examples within 0.2 s of `import typer, rich`
GOAL_JSON_RATIO = 1.15  # case 2: median over examples of tcopy-json / python
GOAL_TABLE_RATIO = 1.3  # case 3: same, table mode written to a file
GOAL_LARGE_RATIO = 1.5  # case 4: 2e7-element tensors
GOAL_STEP_MS = 1.0  # case 5: per-step overhead beyond plain python
GOAL_RSS_MB = 150.0  # case 6: peak RSS of tcopy <= python + 150 MB
LARGE_ELEMENTS = 20_000_000
MANY_STEPS_MAX = "20000"  # --max-steps for case 5 (default 10,000 is below the loop's 10,006 steps)
GOAL_LOOP_STEP_MS = 0.1  # case 7: 4,000-step loop, table view: marginal ms per step over python
GOAL_MLP_JSON_RATIO = 1.2  # case 8: 200-iteration MLP, JSON / python
GOAL_CNN_TABLE_RATIO = 1.3  # case 11: 60-iteration CNN with Adam, table view (100 columns) / python
GOAL_MLP_TABLE_RATIO = 1.3  # case 8: same, table view / JSON
GOAL_TABLE_MS = 1.0  # case 9: one rendered step table (in-process probe)
GOAL_RUNAWAY_S = 5.0  # case 10: `while True: pass` in the table view stops at the step limit within this
RUNAWAY = (
    "`while True: pass` (stopped by the default --max-iterations)",
    "`while True: a.add_(1)` (stopped by the default --max-steps)",
)


# --- running one command ------------------------------------------------------------------


@dataclass
class Sample:
    wall: float
    rss_kb: int
    rc: int
    cpu: float  # user + system seconds of the child (less sensitive than wall time to a busy machine)


def measure(cmd: Sequence[str], out: Path, timeout: float, env: dict[str, str]) -> Sample:
    """Run ``cmd`` with stdout to ``out`` (stderr beside it); wall seconds and peak RSS of that child."""
    with open(out, "wb") as fo, open(out.with_suffix(out.suffix + ".err"), "wb") as fe:
        t0 = time.perf_counter()
        proc = subprocess.Popen(list(cmd), stdout=fo, stderr=fe, stdin=subprocess.DEVNULL, cwd=REPO, env=env)
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    return Sample(wall, int(usage.ru_maxrss), proc.returncode, cpu)  # ru_maxrss is KiB on Linux


def capture(cmd: Sequence[str], env: dict[str, str] | None = None) -> str:
    """stdout of a short helper command (raises on failure)."""
    return subprocess.run(list(cmd), capture_output=True, text=True, check=True, cwd=REPO, env=env).stdout


# --- cases --------------------------------------------------------------------------------


@dataclass
class Variant:
    """One command of a unit. ``side`` is 'python' (the baseline) or 'tcopy'."""

    label: str
    side: str
    cmd: list[str]
    samples: list[Sample] = field(default_factory=list)
    expect_rc: int | None = None  # None: must equal the baseline's rc

    def wall(self) -> float:
        return statistics.median(s.wall for s in self.samples)

    def cpu(self) -> float:
        return statistics.median(s.cpu for s in self.samples)

    def rss_mb(self) -> float:
        return statistics.median(s.rss_kb for s in self.samples) * 1024 / 1e6  # MB (10^6 bytes)


@dataclass
class Unit:
    """A baseline and the tcopy commands compared with it; they alternate within a repetition."""

    case: str
    name: str
    variants: list[Variant]

    @property
    def base(self) -> Variant:
        return next(v for v in self.variants if v.side == "python")

    def get(self, label: str) -> Variant:
        return next(v for v in self.variants if v.label == label)

    def paired(self, label: str, fn: Callable[[float, float], float]) -> float:
        """Median over repetitions of fn(tcopy wall, python wall) from the same repetition."""
        v = self.get(label)
        return statistics.median(fn(a.wall, b.wall) for a, b in zip(v.samples, self.base.samples))

    def cpu_ratio(self, label: str) -> float:
        """Median over repetitions of tcopy CPU time / python CPU time."""
        v = self.get(label)
        return statistics.median(a.cpu / b.cpu for a, b in zip(v.samples, self.base.samples) if b.cpu > 0)


_ON_DEVICE = (
    "import runpy, sys, torch; torch.set_default_device(sys.argv[1]); runpy.run_path(sys.argv[2], run_name='__main__')"
)


def _plain(py: str, path: str, device: str) -> list[str]:
    """Plain python on a case script; on another device, with that device as torch's default (like tcopy -d)."""
    return [py, path] if device == "cpu" else [py, "-c", _ON_DEVICE, device, path]


def build_units(py: str, tcopy: list[str], cases: set[int], device: str, tmp: Path) -> list[Unit]:
    units: list[Unit] = []
    dev = [] if device == "cpu" else ["--device", device]
    if 1 in cases:
        units.append(
            Unit(
                "1",
                "startup",
                [
                    Variant("python -c 'import typer, rich'", "python", [py, "-c", "import typer, rich"], expect_rc=0),
                    Variant("tcopy --help", "tcopy", [*tcopy, "--help"], expect_rc=0),
                    Variant("tcopy --version", "tcopy", [*tcopy, "--version"], expect_rc=0),
                    Variant("tcopy examples", "tcopy", [*tcopy, "examples"], expect_rc=0),
                ],
            )
        )
    if cases & {2, 3, 6}:
        listing = capture([*tcopy, "examples", "--format", "json"])
        names = [json.loads(line)["name"] for line in listing.splitlines() if line.strip()]
        ex_dir = capture([py, "-c", "import os, tcopy_cli.examples as e; print(os.path.dirname(e.__file__))"]).strip()
        for name in names:
            path = str(Path(ex_dir) / f"{name}.py")
            variants = [Variant("python FILE", "python", [py, path])]
            if cases & {2, 6}:
                # An example's errors are expected ("# expect: ..."): tcopy exits 0 where python fails.
                variants.append(
                    Variant("json", "tcopy", [*tcopy, "run", "--example", name, "--format", "json"], expect_rc=0)
                )
            if 3 in cases:
                variants.append(Variant("table", "tcopy", [*tcopy, "run", "--example", name], expect_rc=0))
            units.append(Unit("2/3", name, variants))
    if cases & {4, 6}:
        path = str(CASES / "large_tensors.py")
        units.append(
            Unit(
                "4",
                "large_tensors",
                [
                    Variant("python FILE", "python", _plain(py, path, device)),
                    Variant("json", "tcopy", [*tcopy, "run", path, "--format", "json", *dev]),
                ],
            )
        )
    if cases & {5, 6}:
        path = CASES / "many_steps.py"
        text = path.read_text()
        assert "range(10_000)" in text
        zero = tmp / "many_steps_0.py"
        zero.write_text(text.replace("range(10_000)", "range(0)"))
        for name, p in (("many_steps", str(path)), ("many_steps_0", str(zero))):
            units.append(
                Unit(
                    "5",
                    name,
                    [
                        Variant("python FILE", "python", _plain(py, p, device)),
                        Variant(
                            "json", "tcopy", [*tcopy, "run", p, "--format", "json", "--max-steps", MANY_STEPS_MAX, *dev]
                        ),
                    ],
                )
            )
    if cases & {7, 8, 11}:
        for case, name, width in (("7", "loop_4000", "120"), ("8", "mlp_train", "120"), ("11", "cnn_train", "100")):
            if int(case) not in cases:
                continue
            path = str(CASES / f"{name}.py")
            units.append(
                Unit(
                    case,
                    name,
                    [
                        Variant("python FILE", "python", _plain(py, path, device)),
                        Variant("json", "tcopy", [*tcopy, "run", path, "--format", "json", *dev]),
                        Variant("table", "tcopy", [*tcopy, "run", path, "--width", width, *dev]),
                    ],
                )
            )
    if 10 in cases:
        spin = tmp / "runaway_pass.py"
        spin.write_text("# A loop that never ends and runs no step\nwhile True:\n    pass\n")
        steps = tmp / "runaway_steps.py"
        steps.write_text("# A loop that never ends\nimport torch\na = torch.zeros(2)\nwhile True:\n    a.add_(1)\n")
        units.append(
            Unit(
                "10",
                "runaway",
                [
                    Variant("python -c pass", "python", [py, "-c", "pass"], expect_rc=0),
                    Variant(RUNAWAY[0], "tcopy", [*tcopy, "run", str(spin), *dev], expect_rc=1),
                    Variant(RUNAWAY[1], "tcopy", [*tcopy, "run", str(steps), *dev], expect_rc=1),
                ],
            )
        )
    return units


def out_path(tmp: Path, unit: Unit, v: Variant, rep: int) -> Path:
    return tmp / f"{unit.name}.{v.label.replace(' ', '_').replace('/', '_')}.{rep}.out"


def run_units(units: list[Unit], reps: int, tmp: Path, timeout: float, env: dict[str, str]) -> list[str]:
    problems: list[str] = []
    total = reps * sum(len(u.variants) for u in units)
    done = 0
    t_start = time.perf_counter()
    for rep in range(reps):
        for unit in units:
            k = rep % len(unit.variants)
            for v in unit.variants[k:] + unit.variants[:k]:  # rotate: each command leads in turn
                s = measure(v.cmd, out_path(tmp, unit, v, rep), timeout, env)
                v.samples.append(s)
                done += 1
                sys.stderr.write(
                    f"\r[{done}/{total}] rep {rep + 1} {unit.name:<16} {v.label:<32} {s.wall:6.2f} s "
                    f"{s.rss_kb * 1024 / 1e6:6.0f} MB  ({time.perf_counter() - t_start:4.0f} s)   "
                )
                sys.stderr.flush()
        for unit in units:
            base_rc = unit.base.samples[rep].rc
            for v in unit.variants:
                want = v.expect_rc if v.expect_rc is not None else base_rc
                if v.samples[rep].rc != want:
                    err = out_path(tmp, unit, v, rep).with_suffix(".out.err").read_text()
                    problems.append(
                        f"{unit.name} / {v.label}: exit {v.samples[rep].rc}, expected {want}: {err.strip()[-300:]}"
                    )
    sys.stderr.write("\n")
    return problems


# --- extra checks ---------------------------------------------------------------------------

_MODULES_PROBE = """
import atexit, sys
def _report():
    sys.stderr.write("\\nMODULES " + " ".join(m for m in ("torch", "numpy", "sympy") if m in sys.modules) + "\\n")
atexit.register(_report)
sys.argv = ["tcopy", *sys.argv[1:]]
from tcopy_cli.cli import main
main()
"""


def heavy_imports(py: str, args: list[str], env: dict[str, str]) -> str:
    """Which of torch/numpy/sympy a tcopy command imported (checked in sys.modules at exit)."""
    proc = subprocess.run(
        [py, "-c", _MODULES_PROBE, *args], capture_output=True, text=True, cwd=REPO, env=env, timeout=120
    )
    for line in proc.stderr.splitlines():
        if line.startswith("MODULES"):
            return line.removeprefix("MODULES").strip() or "none"
    return f"? (exit {proc.returncode})"


def observe_probe(py: str, env: dict[str, str], device: str) -> dict[str, float]:
    """Run case 4 in-process and measure what observing each step allocates (observe_probe.py)."""
    dev = [] if device == "cpu" else ["--device", device]
    out = capture([py, str(HERE / "observe_probe.py"), str(CASES / "large_tensors.py"), *dev], env=env)
    return json.loads(out.strip().splitlines()[-1])  # type: ignore[no-any-return]


def machine_facts(py: str, env: dict[str, str]) -> dict[str, str]:
    code = (
        "import json, platform, sys, torch, numpy, typer, rich, importlib.metadata as md, tcopy_cli\n"
        "print(json.dumps({'python': platform.python_version() + ' (' + sys.executable + ')',"
        " 'torch': torch.__version__, 'torch threads': str(torch.get_num_threads()),"
        " 'numpy': numpy.__version__, 'typer': md.version('typer'), 'rich': md.version('rich'),"
        " 'tcopy': tcopy_cli.__version__}))"
    )
    facts = json.loads(capture([py, "-c", code], env=env))
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 0
    mem = ""
    try:
        kb = int(next(x for x in Path("/proc/meminfo").read_text().splitlines() if x.startswith("MemTotal")).split()[1])
        mem = f"{kb / 1024**2:.1f} GiB"
    except (OSError, StopIteration, ValueError):
        pass
    git = ""
    try:
        head = capture(["git", "rev-parse", "--short", "HEAD"]).strip()
        dirty = capture(["git", "status", "--porcelain", "--", "tcopy_cli"]).strip()
        git = head + (" + uncommitted changes in tcopy_cli/" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        pass
    return {
        "CPUs": f"{os.cpu_count()} ({usable} usable){' · ' + model if model else ''}",
        "memory": mem,
        "OS": f"{platform.system()} {platform.release()}",
        **facts,
        "tcopy source": git,
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }


def _loadavg() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg()) + " (1/5/15 min; >CPUs means other work competed)"
    except OSError:
        return "?"


# --- report ---------------------------------------------------------------------------------


def _ok(flag: bool) -> str:
    return "met" if flag else "**NOT met**"


def md_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def report(
    units: list[Unit], cases: set[int], reps: int, facts: dict[str, str], extra: dict[str, object], tmp: Path
) -> str:
    parts: list[str] = []
    goals: list[list[str]] = []
    by_name = {u.name: u for u in units}
    ex_units = [u for u in units if u.case == "2/3"]

    if 1 in cases:
        u = by_name["startup"]
        mods = extra.get("modules", {})
        assert isinstance(mods, dict)
        for v in u.variants[1:]:
            diff = u.paired(v.label, lambda a, b: a - b)
            imported = mods.get(v.label, "?")
            no_torch = "torch" not in imported
            goals.append(
                [
                    "1",
                    f"`{v.label}` vs `python -c 'import typer, rich'`",
                    f"{v.wall():.3f} s vs {u.base.wall():.3f} s: **{diff:+.3f} s** "
                    f"(CPU {v.cpu():.3f} vs {u.base.cpu():.3f} s); heavy imports: {imported}",
                    f"≤ +{GOAL_STARTUP_S} s, no torch",
                    _ok(diff <= GOAL_STARTUP_S and no_torch),
                ]
            )

    if ex_units and cases & {2, 3}:
        rows = []
        json_r: list[float] = []
        table_r: list[float] = []
        for u in ex_units:
            row = [u.name, f"{u.base.wall():.2f}"]
            for label, acc in (("json", json_r), ("table", table_r)):
                if any(v.label == label for v in u.variants):
                    r = u.paired(label, lambda a, b: a / b)
                    acc.append(r)
                    row += [f"{u.get(label).wall():.2f}", f"{r:.2f}", f"{u.cpu_ratio(label):.2f}"]
                else:
                    row += ["-", "-", "-"]
            row.append(str(u.base.samples[0].rc))
            rows.append(row)
        parts.append(
            "### Cases 2–3: shipped examples\n\nWall seconds (median); ratio = median over repetitions of "
            "tcopy/python from the same repetition; CPU ratio the same for user+system time.\n\n"
            + md_table(
                [
                    "example",
                    "python FILE",
                    "tcopy json",
                    "ratio",
                    "CPU ratio",
                    "tcopy table→file",
                    "ratio",
                    "CPU ratio",
                    "exit",
                ],
                rows,
            )
        )
        if 2 in cases and json_r:
            m = statistics.median(json_r)
            goals.append(
                [
                    "2",
                    f"`tcopy run --example NAME --format json` vs `python FILE` ({len(json_r)} examples)",
                    f"median ratio **{m:.2f}** (min {min(json_r):.2f}, max {max(json_r):.2f})",
                    f"≤ {GOAL_JSON_RATIO}",
                    _ok(m <= GOAL_JSON_RATIO),
                ]
            )
        if 3 in cases and table_r:
            m = statistics.median(table_r)
            goals.append(
                [
                    "3",
                    "same, table mode, stdout to a file",
                    f"median ratio **{m:.2f}** (min {min(table_r):.2f}, max {max(table_r):.2f})",
                    f"≤ {GOAL_TABLE_RATIO}",
                    _ok(m <= GOAL_TABLE_RATIO),
                ]
            )

    if 4 in cases:
        u = by_name["large_tensors"]
        r = u.paired("json", lambda a, b: a / b)
        goals.append(
            [
                "4",
                f"`tcopy run large_tensors.py --format json` (10 steps on {LARGE_ELEMENTS:.0e}-element float32)",
                f"{u.get('json').wall():.2f} s vs {u.base.wall():.2f} s: ratio **{r:.2f}** "
                f"(CPU ratio {u.cpu_ratio('json'):.2f})",
                f"≤ {GOAL_LARGE_RATIO}",
                _ok(r <= GOAL_LARGE_RATIO),
            ]
        )
        probe = extra.get("probe")
        if isinstance(probe, dict):
            tensor_mb = LARGE_ELEMENTS * 4 / 2**20
            peak = float(probe.get("max_step_peak_mb", float("nan")))
            pyheap = float(probe.get("max_step_tracemalloc_mb", float("nan")))
            limit = 0.1 * tensor_mb
            dev_peak = probe.get("max_step_device_peak_mb")
            dev_text = "" if dev_peak is None else f", device memory peak {float(dev_peak):.1f} MiB"
            goals.append(
                [
                    "4b",
                    "observing a step does not copy a large tensor (in-process probe, per `Observer.snapshot`)",
                    f"peak RSS growth **{peak:.1f} MiB**, Python heap peak {pyheap:.1f} MiB{dev_text} "
                    f"(one tensor = {tensor_mb:.0f} MiB; {int(probe.get('snapshots', 0))} snapshots after a warm-up; "
                    f"per step {probe.get('per_step_peak_mb')})",
                    f"< {limit:.0f} MiB (10% of one tensor)",
                    _ok(peak < limit and pyheap < limit and (dev_peak is None or float(dev_peak) < limit)),
                ]
            )

    if 5 in cases:
        u, u0 = by_name["many_steps"], by_name["many_steps_0"]
        steps = _steps_in(tmp, u)
        steps0 = _steps_in(tmp, u0)
        diff = u.paired("json", lambda a, b: a - b)
        diff0 = u0.paired("json", lambda a, b: a - b)
        loop = max(steps - steps0, 1)
        all_in = diff / max(steps, 1) * 1000
        marginal = (diff - diff0) / loop * 1000
        goals.append(
            [
                "5",
                f"10,000-iteration loop, 5 live tensors, JSON ({steps:,} steps)",
                f"{u.get('json').wall():.2f} s vs {u.base.wall():.2f} s "
                f"(ratio {u.paired('json', lambda a, b: a / b):.2f}, CPU ratio {u.cpu_ratio('json'):.2f}): "
                f"**{all_in:.3f} ms/step** all-in; {marginal:.3f} ms/step marginal "
                f"(minus the 0-iteration run: {diff0:+.2f} s)",
                f"≤ {GOAL_STEP_MS} ms",
                _ok(all_in <= GOAL_STEP_MS),
            ]
        )

    if 6 in cases:
        rows = []
        worst = -1e9
        for u in units:
            if u.case in ("1", "10"):  # no script on python's side (`python -c ...`): nothing to compare
                continue
            for v in u.variants:
                if v.side != "tcopy":
                    continue
                d = v.rss_mb() - u.base.rss_mb()
                worst = max(worst, d)
                rows.append([f"{u.name} ({v.label})", f"{u.base.rss_mb():.0f}", f"{v.rss_mb():.0f}", f"{d:+.0f}"])
        parts.append(
            "### Case 6: peak RSS (MB = 10^6 bytes, median; kernel rusage of each child)\n\n"
            + md_table(["script (tcopy mode)", "python", "tcopy", "Δ"], rows)
        )
        goals.append(
            [
                "6",
                f"peak RSS, tcopy − python, worst of {len(rows)} runs above",
                f"**{worst:+.0f} MB**",
                f"≤ +{GOAL_RSS_MB:.0f} MB",
                _ok(worst <= GOAL_RSS_MB),
            ]
        )

    for case, name in (("7", "loop_4000"), ("8", "mlp_train"), ("11", "cnn_train")):
        if int(case) not in cases:
            continue
        u = by_name[name]
        steps = _steps_in(tmp, u)
        rj = u.paired("json", lambda a, b: a / b)
        rt = u.paired("table", lambda a, b: a / b)
        tj = statistics.median(a.wall / b.wall for a, b in zip(u.get("table").samples, u.get("json").samples))
        per_step = statistics.median(
            (a.wall - b.wall) / max(steps, 1) * 1000 for a, b in zip(u.get("table").samples, u.base.samples)
        )
        measured = (
            f"python {u.base.wall():.2f} s, json {u.get('json').wall():.2f} s, table {u.get('table').wall():.2f} s "
            f"({steps:,} steps): json/python **{rj:.2f}** (CPU {u.cpu_ratio('json'):.2f}), "
            f"table/python **{rt:.2f}** (CPU {u.cpu_ratio('table'):.2f}), table/json **{tj:.2f}**; "
            f"table {per_step:.2f} ms/step over python"
        )
        if case == "7":
            goals.append(
                [
                    "7",
                    "4,000-step loop over two small tensors, table view (`--width 120`, to a file)",
                    measured,
                    f"table ≤ {GOAL_LOOP_STEP_MS} ms/step over python",
                    _ok(per_step <= GOAL_LOOP_STEP_MS),
                ]
            )
        elif case == "11":
            goals.append(
                [
                    "11",
                    "60-iteration CNN (2 conv, 2 linear, 206,922 parameters) with Adam, table view (`--width 100`)",
                    measured,
                    f"table/python ≤ {GOAL_CNN_TABLE_RATIO}",
                    _ok(rt <= GOAL_CNN_TABLE_RATIO),
                ]
            )
        else:
            goals.append(
                [
                    "8",
                    "200-iteration MLP training loop (seeded)",
                    measured,
                    f"json/python ≤ {GOAL_MLP_JSON_RATIO}, table/json ≤ {GOAL_MLP_TABLE_RATIO}",
                    _ok(rj <= GOAL_MLP_JSON_RATIO) + " / " + _ok(tj <= GOAL_MLP_TABLE_RATIO),
                ]
            )
    probe = extra.get("tables")
    if 9 in cases and isinstance(probe, dict):
        worst = max(float(v) for v in probe.values())
        goals.append(
            [
                "9",
                "one step table drawn (in-process, 120 columns, to a file; median CPU time over the steps of a run)",
                ", ".join(f"{k}: **{float(v):.3f} ms**" for k, v in probe.items()),
                f"≤ {GOAL_TABLE_MS} ms",
                _ok(worst <= GOAL_TABLE_MS),
            ]
        )
    if 10 in cases:
        u = by_name["runaway"]
        for label in RUNAWAY:
            v = u.get(label)
            goals.append(
                [
                    "10",
                    f"{label}, table view",
                    f"**{v.wall():.2f} s** (CPU {v.cpu():.2f} s; python start-up {u.base.wall():.2f} s)",
                    f"≤ {GOAL_RUNAWAY_S:.0f} s",
                    _ok(v.wall() <= GOAL_RUNAWAY_S),
                ]
            )

    head = md_table(["#", "case", "measured", "goal", "result"], goals)
    facts_md = "\n".join(f"- {k}: {v}" for k, v in facts.items())
    return (
        f"## Goals ({reps} repetition{'s' if reps != 1 else ''}, alternating; medians)\n\n{head}\n\n"
        + "\n\n".join(parts)
        + f"\n\n### Machine\n\n{facts_md}\n"
    )


def _steps_in(tmp: Path, unit: Unit) -> int:
    """Steps tcopy reported in its JSON ``end`` event (last repetition's output)."""
    v = unit.get("json")
    out = out_path(tmp, unit, v, len(v.samples) - 1)
    for line in reversed(out.read_text().splitlines()):
        if line.strip():
            ev = json.loads(line)
            if ev.get("event") == "end":
                return int(ev.get("steps", 0))
            break
    return 0


def write_results(path: Path, command: str, body: str) -> None:
    block = f"{BEGIN}\n\nProduced by:\n\n```\n{command}\n```\n\n{body}\n{END}"
    if path.exists():
        text = path.read_text()
        if BEGIN in text and END in text:
            pre, rest = text.split(BEGIN, 1)
            post = rest.split(END, 1)[1]
            path.write_text(pre + block + post)
            return
    path.write_text(
        "# tcopy benchmarks\n\nReproduce with the command below (see benchmarks/run.py for what each case is).\n\n"
        + block
        + "\n"
    )


# --- main -----------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--python", default=sys.executable, help="interpreter for the baseline (default: this one)")
    ap.add_argument(
        "--tcopy",
        default=None,
        help="command that runs tcopy, e.g. '/venv/bin/tcopy' (default: the tcopy script beside --python, "
        "else 'PYTHON -m tcopy_cli')",
    )
    ap.add_argument("--reps", type=int, default=None, help="repetitions (default 3; 1 with --quick)")
    ap.add_argument("--quick", action="store_true", help="one repetition")
    ap.add_argument("--cases", default="1,2,3,4,5,6,7,8,9,10,11", help="comma-separated case numbers (default all)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds before one command is killed")
    ap.add_argument("--results", default=str(RESULTS), help="markdown file to update ('' for none)")
    ap.add_argument(
        "--device",
        default="cpu",
        help="device for cases 4-5 and the probe (tcopy --device; the baseline sets torch's default device)",
    )
    args = ap.parse_args(argv)

    py = args.python
    if args.tcopy:
        tcopy = shlex.split(args.tcopy)
    else:
        script = Path(py).parent / "tcopy"
        tcopy = [str(script)] if script.exists() else [py, "-m", "tcopy_cli"]
    cases = {int(c) for c in args.cases.split(",") if c.strip()}
    reps = args.reps or (1 if args.quick else 3)
    env = dict(os.environ)
    env.pop("FORCE_COLOR", None)
    env.pop("PYTHONUNBUFFERED", None)
    # Measure this checkout's tcopy_cli even when --python is an environment without it installed.
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    os.environ["PYTHONPATH"] = env["PYTHONPATH"]
    # The worker runs with PYTHONDONTWRITEBYTECODE: in an edited checkout it would compile the
    # modules changed since the last compile on every run (0.1-0.2 s). An installed tcopy has
    # its bytecode from pip; compile this checkout's once, with the baseline's interpreter.
    subprocess.run([py, "-m", "compileall", "-q", str(REPO / "tcopy_cli")], check=False, env=env)

    with tempfile.TemporaryDirectory(prefix="tcopy-bench-") as tmpname:
        tmp = Path(tmpname)
        facts = machine_facts(py, env)
        facts["python (baseline)"] = py
        facts["tcopy command"] = shlex.join(tcopy)
        facts["device (cases 4-5)"] = args.device
        units = build_units(py, tcopy, cases, args.device, tmp)
        # Warm the page cache (torch's shared libraries) so the first timed run isn't an outlier.
        for cmd in ([py, "-c", "import torch"], [*tcopy, "run", "-e", "a = torch.ones(2)", "--format", "json"]):
            measure(cmd, tmp / "warmup.out", args.timeout, env)
        extra: dict[str, object] = {}
        if 1 in cases:
            extra["modules"] = {
                "tcopy --help": heavy_imports(py, ["--help"], env),
                "tcopy --version": heavy_imports(py, ["--version"], env),
                "tcopy examples": heavy_imports(py, ["examples"], env),
            }
        if 9 in cases:
            try:
                out = capture([py, str(HERE / "table_probe.py")], env=env)
                extra["tables"] = json.loads(out.strip().splitlines()[-1])
            except (subprocess.CalledProcessError, ValueError, IndexError) as exc:
                sys.stderr.write(f"table probe failed: {exc}\n")
        if 4 in cases:
            try:
                extra["probe"] = observe_probe(py, env, args.device)
            except (subprocess.CalledProcessError, ValueError, IndexError) as exc:
                sys.stderr.write(f"observe probe failed: {exc}\n")
        facts["load average before"] = _loadavg()
        t0 = time.perf_counter()
        problems = run_units(units, reps, tmp, args.timeout, env)
        elapsed = time.perf_counter() - t0
        facts["load average after"] = _loadavg()
        facts["timed part took"] = f"{elapsed:.0f} s"
        body = report(units, cases, reps, facts, extra, tmp)
    if problems:
        body += "\n### Unexpected exit codes\n\n" + "\n".join(f"- {p}" for p in problems) + "\n"
    command = shlex.join([Path(sys.executable).as_posix(), *sys.argv]) if argv is None else shlex.join(argv)
    print(f"\nCommand: {command}\n")
    print(body)
    if args.results:
        write_results(Path(args.results), command, body)
        print(f"(written to {args.results})")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
