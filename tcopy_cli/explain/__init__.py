"""Rules that turn observed facts into notes and error explanations."""

from tcopy_cli.explain.errors import explain_error
from tcopy_cli.explain.notes import Explainer

__all__ = ["Explainer", "explain_error"]
