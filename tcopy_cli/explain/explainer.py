"""The explain pass: runs note rules over each step's facts, in order, step after step.

It is a pure function of the Step records (plus the state it carries from one step to
the next), so it can run wherever the records are: beside the run, or after it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from tcopy_cli.explain.facts import ExplainState, Rule, StepFacts
from tcopy_cli.trace.records import ErrorInfo, Step, evolve

ErrorRule = Callable[[StepFacts, ErrorInfo], ErrorInfo]


@dataclass
class Explainer:
    """Turns fact-only steps into explained ones; remembers what earlier steps did."""

    rules: Sequence[Rule]
    explain_error: ErrorRule | None = None
    state: ExplainState = field(default_factory=ExplainState)

    def explain(self, step: Step) -> Step:
        """``step`` with its notes, and its error explained (steps must come in run order)."""
        facts = StepFacts(step, self.state)
        for rule in self.rules:
            facts.notes.extend(rule(facts))
        self.state.remember(facts)
        self.state.previous = step.tensors
        self.state.previous_arrays = step.arrays
        self.state.previous_unlisted = step.unlisted
        error = step.error
        if error is not None and self.explain_error is not None:
            error = self.explain_error(facts, error)
        return evolve(step, explanations=facts.notes, error=error)
