"""Rules that turn observed facts into notes and error explanations.

A note rule is a function of one step's facts (``facts.StepFacts``) that returns
``Note`` records; the pipeline (``tcopy_cli.pipeline``) lists the rules in the order
their notes appear, and ``Explainer`` runs them step after step.
"""

from tcopy_cli.explain.errors import explain_error, explain_step_error
from tcopy_cli.explain.explainer import Explainer
from tcopy_cli.explain.facts import ExplainState, Rule, StepFacts, each_kept_name, each_new_name, note

__all__ = [
    "ExplainState",
    "Explainer",
    "Rule",
    "StepFacts",
    "each_kept_name",
    "each_new_name",
    "explain_error",
    "explain_step_error",
    "note",
]
