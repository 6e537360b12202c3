"""The engine: CPython runs the script under a line tracer; torch's dispatch records each operation.

``run_source`` runs a script in this process and collects its fact-only steps (the explain pass
adds notes: ``tcopy_cli.pipeline.run_source``). It is not confined: the command line runs scripts
in a confined worker process (``tcopy_cli.worker``).
"""

from __future__ import annotations

from tcopy_cli.limits import DEFAULT_MAX_VALUES, Limits
from tcopy_cli.trace import Trace


def run_source(
    source: str,
    device: str = "cpu",
    keep_going: bool = False,
    max_values: int = DEFAULT_MAX_VALUES,
    limits: Limits | None = None,
    origin: str = "<inline>",
    graph: bool = False,
) -> Trace:
    """Parse and run ``source`` with CPython in this process; collect the steps. Raises ScriptRejected
    for what Python can't parse."""
    from tcopy_cli.engine.session import resolve_device
    from tcopy_cli.engine.stepper import RunOptions, Stepper
    from tcopy_cli.program import parse_program
    from tcopy_cli.trace.records import Step

    limits = limits or Limits()
    program = parse_program(source, origin, limits)
    options = RunOptions(
        device=resolve_device(device), limits=limits, keep_going=keep_going, max_values=max_values, graph=graph
    )
    steps: list[Step] = []
    stepper = Stepper(program, options, steps.append)
    trace = Trace(info=stepper.info(origin), steps=steps)
    try:
        trace.summary = stepper.run()
    finally:
        stepper.close()
    return trace


__all__ = ["run_source"]
