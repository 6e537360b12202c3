"""Rules that turn observed facts into notes and error explanations."""

from tcopy_cli.explain.errors import explain_error
from tcopy_cli.explain.notes import step_notes

__all__ = ["explain_error", "step_notes"]
