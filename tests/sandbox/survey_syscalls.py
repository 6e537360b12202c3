"""Measure the system calls the worker makes, for the seccomp allow-list (not a test).

Runs, under ``strace -f -ff``:

1. one real CPython process that runs every script of the corpora (``tests/corpus/*/``,
   ``tests/outside/``), the shipped examples and ``tests/sandbox/workloads/`` (an MLP and a
   CNN trained with Adam, ``torch.func``, ``torch.distributions``, ``deepcopy``, NumPy
   bridges, printing, warnings, exceptions, thread pools) with ``runpy``, as the engine
   that runs scripts as real Python will;
2. ``tcopy run`` (confined and ``--trust``), ``tcopy compare`` and ``tcopy repl`` on a
   few scripts, keeping only the worker process and its threads.

Counted: every call after ``import torch`` begins (the runner, trusted workers) or after
the seccomp filter is loaded (confined workers), in every thread. Prints each call with
its count and the per-argument values seen for the argument-filtered calls.

    python tests/sandbox/survey_syscalls.py [--keep DIR] [--only-runner] [--env-var NAME=VALUE]
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(
    [
        *REPO.glob("tests/corpus/*/*.py"),
        *REPO.glob("tests/outside/*.py"),
        *(p for p in REPO.glob("tcopy_cli/examples/*.py") if p.name != "__init__.py"),
        *REPO.glob("tests/sandbox/workloads/*.py"),
    ]
)

RUNNER = r"""
import os, runpy, signal, sys, io, contextlib
class Late(Exception):
    pass
def late(*_):
    raise Late()
signal.signal(signal.SIGALRM, late)
import torch
for path in sys.argv[1:]:
    signal.alarm(60)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            runpy.run_path(path, run_name="__main__")
    except BaseException as exc:
        print(os.path.basename(path), "raised", type(exc).__name__, file=sys.stderr)
    finally:
        signal.alarm(0)
"""

LINE = re.compile(r"^(?:\d+ )?(?:<\.\.\. (\w+) resumed>|(\w+)\()")
CLONE = re.compile(r"^(?:\d+ )?(?:clone|clone3)\(.*CLONE_THREAD.*\) = (\d+)")
RESUMED_CLONE = re.compile(r"^<\.\.\. clone3? resumed>.* = (\d+)")
PRCTL = re.compile(r"^prctl\((\w+)")
FIRST_ARG = re.compile(r"^(\w+)\(([^,)]*)")


def _calls(path: Path, start: str | None, counts: collections.Counter[str], args: dict[str, set[str]]) -> list[int]:
    """Count the calls in one thread's trace after ``start`` (None: all); the threads it started."""
    started = start is None
    threads: list[int] = []
    pending_clone = False
    for line in path.read_text(errors="replace").splitlines():
        if not started:
            if start in line:
                started = True
            continue
        m = LINE.match(line)
        if not m:
            continue
        name = m.group(1) or m.group(2)
        if m.group(2):  # a call's first line (not its resumption) counts once
            counts[name] += 1
            first = FIRST_ARG.match(line)
            if first and name in ARG_WATCH:
                args.setdefault(name, set()).add(first.group(2))
        if name in ("clone", "clone3") and "CLONE_THREAD" in line:
            pending_clone = True
        c = CLONE.match(line) or (RESUMED_CLONE.match(line) if pending_clone else None)
        if c:
            threads.append(int(c.group(1)))
            pending_clone = False
    return threads


ARG_WATCH = {
    "prctl",
    "prlimit64",
    "sched_setaffinity",
    "sched_getaffinity",
    "sched_setscheduler",
    "sched_setparam",
    "sched_getparam",
    "sched_getscheduler",
    "getpriority",
    "setpriority",
    "kill",
    "tgkill",
    "tkill",
    "rt_sigqueueinfo",
    "mmap",
    "ioctl",
    "fcntl",
    "madvise",
    "futex",
    "socket",
    "clone",
    "clone3",
}


def _tree(directory: Path, root: int, start: str | None, counts: collections.Counter[str], args: dict) -> None:
    todo = [(root, start)]
    seen = set()
    while todo:
        tid, marker = todo.pop()
        if tid in seen:
            continue
        seen.add(tid)
        trace = directory / f"t.{tid}"
        if trace.exists():
            todo += [(t, None) for t in _calls(trace, marker, counts, args)]


def _strace(directory: Path, command: list[str], stdin: str | None = None, env: dict | None = None) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for old in directory.glob("t.*"):
        old.unlink()
    subprocess.run(
        ["strace", "-f", "-ff", "-qq", "-s", "120", "-o", str(directory / "t"), *command],
        input=stdin,
        text=True,
        capture_output=True,
        env=env,
        timeout=1800,
    )


def _workers(directory: Path) -> list[int]:
    pids = []
    for trace in directory.glob("t.*"):
        with trace.open(errors="replace") as fh:
            head = [fh.readline() for _ in range(200)]
        if any(line.startswith("execve(") and "tcopy_cli.worker" in line for line in head):
            pids.append(int(trace.name.split(".")[1]))
    return pids


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--keep", help="keep the traces in this directory")
    parser.add_argument("--only-runner", action="store_true")
    parser.add_argument("--python", default=sys.executable)
    args_ns = parser.parse_args()
    directory = Path(args_ns.keep or tempfile.mkdtemp(prefix="tcopy-syscalls-"))
    directory.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, TCOPY_ALLOW_TEST_HOOK="1", PYTHONPATH=str(REPO))
    totals: collections.Counter[str] = collections.Counter()
    args: dict[str, set[str]] = {}
    per_source: dict[str, set[str]] = {}

    def record(label: str, counts: collections.Counter[str]) -> None:
        totals.update(counts)
        per_source[label] = set(counts)
        print(f"{label}: {len(counts)} distinct calls, {sum(counts.values())} calls", file=sys.stderr)

    work = Path(tempfile.mkdtemp(prefix="tcopy-survey-cwd-"))
    runner = work / "runner.py"
    runner.write_text(RUNNER)
    _strace(directory / "runner", [args_ns.python, str(runner), *map(str, SCRIPTS)], env=env)
    root = min(int(p.name.split(".")[1]) for p in (directory / "runner").glob("t.*"))
    counts: collections.Counter[str] = collections.Counter()
    _tree(directory / "runner", root, "torch/__init__.py", counts, args)
    record(f"real Python, {len(SCRIPTS)} scripts", counts)
    if not args_ns.only_runner:
        tcopy = [args_ns.python, "-m", "tcopy_cli"]
        runs = [
            (
                "tcopy run (confined)",
                [*tcopy, "run", "--format", "json", str(REPO / "benchmarks/cases/mlp_train.py")],
                None,
                "seccomp(",
            ),
            (
                "tcopy run --trust",
                [*tcopy, "run", "--trust", "--format", "json", str(REPO / "tests/sandbox/workloads/cnn_train.py")],
                None,
                "torch/__init__.py",
            ),
            (
                "tcopy run --trust (numpy)",
                [*tcopy, "run", "--trust", "--format", "json", str(REPO / "tests/sandbox/workloads/numpy_misc.py")],
                None,
                "torch/__init__.py",
            ),
            ("tcopy compare", [*tcopy, "compare", "--format", "json"], None, "seccomp("),
            ("tcopy repl", [*tcopy, "repl", "--no-color"], "a = torch.ones(3)\nb = a * 2\n:quit\n", "seccomp("),
            (
                "tcopy run (timeout)",
                [*tcopy, "run", "--timeout", "1", "-e", "x = 0\nwhile True:\n    x += 1"],
                None,
                "seccomp(",
            ),
        ]
        for number, (label, command, stdin, marker) in enumerate(runs):
            where = directory / f"run{number}"
            _strace(where, command, stdin, env=env)
            counts = collections.Counter()
            for pid in _workers(where):
                _tree(where, pid, marker, counts, args)
            record(label, counts)
    print(f"{len(totals)} distinct system calls")
    for name, count in sorted(totals.items()):
        where = [label for label, names in per_source.items() if name in names]
        print(f"{name:24} {count:>9}  {', '.join(where)}")
    for name in sorted(args):
        print(f"first arguments of {name}: {sorted(args[name])[:40]}")
    if not args_ns.keep:
        shutil.rmtree(directory, ignore_errors=True)
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
