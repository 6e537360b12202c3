"""Profile one benchmark case in-process and show what dominates tcopy's time.

    python benchmarks/profile_case.py large            # case 4, cProfile
    python benchmarks/profile_case.py many              # case 5, cProfile
    python benchmarks/profile_case.py example:clone     # a shipped example
    python benchmarks/profile_case.py floor             # tcopy run -e "a = torch.ones(2)"
    python benchmarks/profile_case.py many --pyinstrument   # needs `pip install pyinstrument`

The whole ``tcopy run ... --format json`` (or ``--format table``; import of tcopy and
torch included, output discarded) runs under the profiler. cProfile output: the top functions by own time and
by cumulative time, as a percentage of the profiled total; ``--filter`` keeps only rows
whose file matches (default: everything).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
from contextlib import redirect_stdout
from pathlib import Path

HERE = Path(__file__).resolve().parent
TARGETS = {
    "large": [str(HERE / "cases" / "large_tensors.py")],
    "many": [str(HERE / "cases" / "many_steps.py"), "--max-steps", "20000"],
    "floor": ["-e", "a = torch.ones(2)"],  # fixed cost of `tcopy run` on a one-step script
}


def _argv(case: str, fmt: str) -> list[str]:
    if case.startswith("example:"):
        return ["tcopy", "run", "--example", case.split(":", 1)[1], "--format", fmt]
    return ["tcopy", "run", *TARGETS[case], "--format", fmt]


def _run_tcopy(argv: list[str]) -> None:
    from tcopy_cli import cli

    sys.argv = argv
    with redirect_stdout(io.StringIO()):
        try:
            cli.main()
        except SystemExit:
            pass


def _short(path: str) -> str:
    for marker in ("site-packages/", "/work/main/"):
        if marker in path:
            return path.split(marker, 1)[1]
    return os.path.basename(path)


def _table(stats: pstats.Stats, key: int, top: int, flt: str, total: float) -> str:
    rows = []
    entries = stats.stats  # type: ignore[attr-defined]
    for (file, line, fn), (_cc, nc, tt, ct, _callers) in entries.items():
        if flt and flt not in file:
            continue
        rows.append((tt, ct, nc, f"{_short(file)}:{line}({fn})"))
    rows.sort(key=lambda r: r[key], reverse=True)
    out = [f"{'own s':>8} {'own %':>6} {'cum s':>8} {'cum %':>6} {'calls':>9}  function"]
    for tt, ct, nc, name in rows[:top]:
        out.append(f"{tt:8.3f} {100 * tt / total:6.1f} {ct:8.3f} {100 * ct / total:6.1f} {nc:9d}  {name}")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("case", help="large, many, floor, or example:NAME")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--filter", default="", help="only rows whose file path contains this (e.g. tcopy_cli)")
    ap.add_argument("--pyinstrument", action="store_true", help="use pyinstrument (call tree) instead")
    ap.add_argument("--device", default=None, help="pass --device to tcopy run (e.g. cuda)")
    ap.add_argument("--format", default="json", help="tcopy run --format (json, table, markdown)")
    args = ap.parse_args()
    argv = _argv(args.case, args.format) + (["--device", args.device] if args.device else [])

    if args.pyinstrument:
        from pyinstrument import Profiler

        prof = Profiler(interval=0.001)
        prof.start()
        _run_tcopy(argv)
        prof.stop()
        print(prof.output_text(unicode=True, color=False, show_all=False))
        return

    profiler = cProfile.Profile()
    profiler.enable()
    _run_tcopy(argv)
    profiler.disable()
    stats = pstats.Stats(profiler)
    total = stats.total_tt  # type: ignore[attr-defined]
    print(f"profiled: {' '.join(argv)}\ntotal {total:.2f} s (cProfile inflates Python-heavy code)\n")
    print("By own time:\n" + _table(stats, 0, args.top, args.filter, total) + "\n")
    print("By cumulative time:\n" + _table(stats, 1, args.top, args.filter, total))


if __name__ == "__main__":
    main()
