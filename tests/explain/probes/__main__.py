"""``python -m probes`` (from tests/explain): every note tcopy gives on each probe, for reading."""

from __future__ import annotations

import sys

from probes import load, probe_names
from tcopy_cli.pipeline import run_source


def main(names: list[str]) -> None:
    for name in names or probe_names():
        probe = load(name)
        print(f"=== {name}")
        for step in run_source(probe.source, keep_going=True).steps:
            print(f"--- line {step.line}: {step.source}")
            for n in step.explanations:
                print(f"  [{n.kind}] {n.line}")
            if step.error is not None:
                print(f"  ERROR {step.error.headline}")
                print(f"  [explanation] {step.error.explanation}")


if __name__ == "__main__":
    main(sys.argv[1:])
