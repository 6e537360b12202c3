"""Run statements, observe tensors and autograd, build Step records."""

from __future__ import annotations

from dataclasses import dataclass, field

from tcopy_cli.limits import DEFAULT_MAX_VALUES, Limits
from tcopy_cli.trace.records import RunInfo, RunSummary, Step


@dataclass
class Trace:
    """A finished run: start facts, every step, and how it ended."""

    info: RunInfo
    steps: list[Step] = field(default_factory=list)
    summary: RunSummary | None = None


def run_source(
    source: str,
    device: str = "cpu",
    keep_going: bool = False,
    max_values: int = DEFAULT_MAX_VALUES,
    limits: Limits | None = None,
    origin: str = "<inline>",
    graph: bool = False,
    trust: bool = False,
) -> Trace:
    """Parse, validate and run ``source``; collect the steps. Raises ScriptRejected.

    ``trust=True`` runs it with CPython itself, unchecked (``tcopy_cli.trace.trusted``):
    only for scripts you would run with ``python``. The steps carry facts only;
    ``tcopy_cli.pipeline.run_source`` adds the notes.
    """
    from tcopy_cli.script.parse import parse_script
    from tcopy_cli.trace.runner import Runner, RunOptions, resolve_device

    limits = limits or Limits()
    program = parse_script(source, origin, limits, validate=not trust)
    options = RunOptions(
        device=resolve_device(device), limits=limits, keep_going=keep_going, max_values=max_values, graph=graph
    )
    steps: list[Step] = []
    if trust:
        from tcopy_cli.trace.trusted import TrustedRunner

        runner: Runner = TrustedRunner(program, options, steps.append)
    else:
        runner = Runner(program, options, steps.append)
    trace = Trace(info=runner.info(origin), steps=steps)
    try:
        trace.summary = runner.run()
    finally:
        runner.close()
    return trace


__all__ = ["Trace", "run_source"]
