"""Plain-language explanations of the errors a step raised, from a catalogue of known errors.

Each catalogue entry (``catalogue.CATALOGUE``) matches the exception type and the stable
part of torch's message, and explains the error for this script: which of its tensors
and which call, why, and the fix. Errors no entry knows keep their message and say so.
"""

from __future__ import annotations

# The family modules add their entries on import, in this order (more specific first:
# a loss's "expected scalar type Long" before the general dtype mismatch).
# isort: off
from tcopy_cli.explain.errors import autograd, inplace, training, dtypes, shapes, simple, script, permissions  # noqa: F401

# isort: on
from tcopy_cli.explain.errors.catalogue import CATALOGUE, Entry, find
from tcopy_cli.explain.errors.context import ErrorContext
from tcopy_cli.explain.facts import StepFacts, note
from tcopy_cli.trace.records import ErrorInfo, Note

UNKNOWN = "tcopy knows no further explanation for this error; the message above is torch's (or Python's) own."


def explain_error(type_name: str, message: str) -> str | None:
    """A plain-language explanation for an error without a script around it, or None when no entry knows it."""
    found = find(type_name, message)
    if found is None:
        return None
    e, m = found
    return e.explain(ErrorContext(ErrorInfo(type_name, message)), m)


def catalogue_entry(type_name: str, message: str) -> str | None:
    """The id of the catalogue entry that explains an error, or None."""
    found = find(type_name, message)
    return found[0].id if found else None


def explain_step_error(f: StepFacts, error: ErrorInfo) -> ErrorInfo:
    """The step's error with its explanation, naming this script's tensors, calls and earlier steps."""
    found = find(error.type, error.message)
    if found is None:
        return ErrorInfo(error.type, error.message, UNKNOWN, explained=False, expected=error.expected)
    e, m = found
    try:
        text = e.explain(ErrorContext.of(f, error), m)
    except Exception:  # an explanation must never end the run: say what the message alone allows
        text = e.explain(ErrorContext(error), m)
    return ErrorInfo(error.type, error.message, text, explained=True, expected=error.expected)


def caught_error(f: StepFacts) -> list[Note]:
    """An error the statement raised that a surrounding try/except handles."""
    caught = f.step.caught
    if caught is None:
        return []
    return [
        note(
            "error.caught",
            f"This statement raised {caught.error.headline} — caught by the except at line {caught.except_line}.",
        )
    ]


def expect_outcome(f: StepFacts) -> list[Note]:
    """A ``# expect: NAME`` comment the statement did not bear out (no error, or another one)."""
    step = f.step
    if step.expect is None or step.expected:
        return []
    mark = f"# expect: {step.expect}"
    if step.error is not None:
        return [
            note(
                "expect.other",
                f"This line says '{mark}', but the statement raised {step.error.type}: not the expected error.",
                severity="warning",
            )
        ]
    if step.caught is not None:
        return []
    return [note("expect.missing", f"This line says '{mark}', but the statement raised nothing.", severity="warning")]


__all__ = [
    "CATALOGUE",
    "UNKNOWN",
    "Entry",
    "catalogue_entry",
    "caught_error",
    "expect_outcome",
    "explain_error",
    "explain_step_error",
]
