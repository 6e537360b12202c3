"""Where a run is assembled: a parsed script, run in the confined worker or in this process,
its fact-only steps, then the explain pass; the caller renders what comes out.

The command line (``run``, ``graph``, ``repl``) and the Python API all come through here:
``run_in_worker`` and ``worker_session`` for a worker (``tcopy_cli.supervise`` carries its
frames and checks them), ``run_source`` in this process. ``NOTE_RULES`` is the list of note
rules, in the order their notes appear under a step; to add a rule, write it in
``tcopy_cli/explain/`` and list it here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ParamSpec

from tcopy_cli.engine import run_source as run_facts
from tcopy_cli.explain.changes import (
    in_place_writes,
    joined_graph,
    numpy_aliases,
    numpy_views_written,
    requires_grad_flip,
    untracked_write,
)
from tcopy_cli.explain.debugger import debugger_calls
from tcopy_cli.explain.errors import caught_error, expect_outcome, explain_step_error
from tcopy_cli.explain.explainer import Explainer
from tcopy_cli.explain.facts import Rule, each_kept_name, each_new_name
from tcopy_cli.explain.grads import corrupted_grads, grad_call, grad_changes
from tcopy_cli.explain.history import chained_graph, collected_graphs
from tcopy_cli.explain.hooks import hook_notes
from tcopy_cli.explain.ops import op_notes
from tcopy_cli.explain.promotion import promotions
from tcopy_cli.explain.relations import (
    grad_alias,
    new_memory,
    rebinding,
    rebound_graph_used,
    same_node,
    same_object,
    shared_memory,
)
from tcopy_cli.explain.resets import grads_not_reset
from tcopy_cli.explain.saved import saved_tensor_events
from tcopy_cli.explain.torch_warnings import torch_warnings
from tcopy_cli.explain.writes import memory_swapped, write_effects
from tcopy_cli.trace import Trace
from tcopy_cli.trace.records import RunInfo, RunSummary, Step

if TYPE_CHECKING:
    from tcopy_cli.process.session import WorkerSession
    from tcopy_cli.program import Program
    from tcopy_cli.supervise import WorkerOptions

P = ParamSpec("P")

NOTE_RULES: tuple[Rule, ...] = (
    caught_error,
    expect_outcome,
    op_notes,
    each_new_name(same_object, grad_alias, same_node, shared_memory, new_memory, rebinding),
    promotions,
    each_kept_name(requires_grad_flip, joined_graph, untracked_write),
    in_place_writes,
    write_effects,
    memory_swapped,
    numpy_views_written,
    numpy_aliases,
    chained_graph,
    collected_graphs,
    grad_changes,
    grads_not_reset,
    corrupted_grads,
    grad_call,
    rebound_graph_used,
    hook_notes,
    saved_tensor_events,
    torch_warnings,
    debugger_calls,
)


def explainer() -> Explainer:
    """A fresh explain pass with every note rule (one per run: it remembers earlier steps)."""
    return Explainer(NOTE_RULES, explain_step_error)


def explain_trace(trace: Trace) -> Trace:
    """The same run with every step explained."""
    pass_ = explainer()
    return Trace(info=trace.info, steps=[pass_.explain(s) for s in trace.steps], summary=trace.summary)


def _explained(run: Callable[P, Trace]) -> Callable[P, Trace]:
    def run_source(*args: P.args, **kwargs: P.kwargs) -> Trace:
        """Parse and run a script in this process, then explain every step (the arguments of
        ``tcopy_cli.engine.run_source``). Raises ScriptRejected."""
        return explain_trace(run(*args, **kwargs))

    return run_source


run_source = _explained(run_facts)


def run_in_worker(
    program: Program,
    options: WorkerOptions,
    emit: Callable[[Step], None],
    start: Callable[[RunInfo], None],
    **worker: Any,
) -> RunSummary:
    """Run a parsed script in the confined worker: ``start`` gets the RunInfo, ``emit`` every
    step explained, in order; the RunSummary the parent counted. ``worker``: the other
    arguments of ``supervise.run_in_worker`` (``proc``, the worker ``supervise.launch`` already
    started for it; ``on_hook``). Raises as ``supervise.run_in_worker``."""
    from tcopy_cli import supervise

    return supervise.run_in_worker(program, options, emit, start, explain=explainer().explain, **worker)


def worker_session(options: WorkerOptions, start: Callable[[RunInfo], None]) -> WorkerSession:
    """A REPL's worker: each piece of code it runs comes back explained, one explain pass per worker."""
    from tcopy_cli.process.session import WorkerSession

    return WorkerSession(options, start, explain=lambda: explainer().explain)


__all__ = ["NOTE_RULES", "explain_trace", "explainer", "run_in_worker", "run_source", "worker_session"]
