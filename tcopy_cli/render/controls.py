"""Control characters in text a script made, shown as escapes instead of sent to the terminal.

What a script prints, raises or writes in its source reaches the table and Markdown views
(and stderr) as text. An escape sequence in it (``\\x1b[2J``, an OSC title) would clear the
screen, forge a closing line or retitle the window; these views show it as ``\\x1b`` the way
Python's ``repr`` does. JSON needs nothing: its encoder escapes control characters itself.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TypeVar

from tcopy_cli.trace.records import ArrayRecord, ErrorInfo, Step, TensorRecord, evolve

# C0 controls but tab and newline, DEL, and the C1 controls (an 8-bit CSI is 0x9b); and
# the bidirectional controls, which reorder what follows them on the line (a string in a
# statement could make the header or a note read otherwise than the code runs).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escaped(m: re.Match[str]) -> str:
    code = ord(m[0])
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` with each control character as ``\\xNN`` (a bidirectional control as ``\\uNNNN``)."""
    if _CONTROL.search(text) is None:
        return text
    return _CONTROL.sub(_escaped, text)


def _error(error: ErrorInfo) -> ErrorInfo:
    return replace(
        error, type=visible(error.type), message=visible(error.message), explanation=visible(error.explanation)
    )


# The text fields of a record the views draw (a worker taken over by a script could put
# anything there; torch's own names never hold a control character).
_RECORD_TEXTS = ("dtype", "device", "preview", "storage", "grad_fn", "version_counter")


def _record_texts(r: TensorRecord | ArrayRecord | None) -> list[str]:
    if r is None:
        return []
    texts = [t for f in _RECORD_TEXTS if isinstance(t := getattr(r, f, None), str)]
    texts.extend(x for x in r.shares_memory_with if isinstance(x, str))
    return texts + _record_texts(r.grad) if isinstance(r, TensorRecord) else texts


R = TypeVar("R", TensorRecord, ArrayRecord)


def _visible_record(r: R) -> R:
    changes: dict[str, object] = {
        f: visible(v) for f in _RECORD_TEXTS if isinstance(v := getattr(r, f, None), str) and f in r.__dict__
    }
    changes["shares_memory_with"] = [visible(x) for x in r.shares_memory_with]
    if isinstance(r, TensorRecord) and r.grad is not None:
        changes["grad"] = _visible_record(r.grad)
    return evolve(r, **changes)


# Records found clean, by id (each kept, so its id is not reused meanwhile): a tensor that
# did not change comes as the same record object step after step.
_CLEAN: dict[int, TensorRecord | ArrayRecord] = {}
_CLEAN_KEPT = 4096


def _has_control(step: Step) -> bool:
    texts = [step.source, step.stdout, step.value or "", *step.warnings, *step.narration, *step.hooks, *step.unlisted]
    texts.extend(n.text for n in step.explanations)
    for error in (step.error, step.caught.error if step.caught is not None else None):
        if error is not None:
            texts += [error.type, error.message, error.explanation]
    fresh: list[TensorRecord | ArrayRecord] = []
    for records in (step.tensors, step.arrays):
        texts.extend(records)
        for r in records.values():
            if _CLEAN.get(id(r)) is not r:
                texts += _record_texts(r)
                fresh.append(r)
    # Newlines are no control here: the texts are searched as one.
    if _CONTROL.search("\n".join(texts)) is not None:
        return True
    if len(_CLEAN) + len(fresh) > _CLEAN_KEPT:
        _CLEAN.clear()
    _CLEAN.update((id(r), r) for r in fresh)
    return False


def visible_step(step: Step) -> Step:
    """The step with control characters in its script-made text escaped (itself when it has none)."""
    if not _has_control(step):
        return step
    caught = step.caught
    if caught is not None:
        caught = replace(caught, error=_error(caught.error))
    return replace(
        step,
        source=visible(step.source),
        stdout=visible(step.stdout),
        value=visible(step.value) if step.value is not None else None,
        warnings=[visible(w) for w in step.warnings],
        narration=[visible(n) for n in step.narration],
        hooks=[visible(h) for h in step.hooks],
        explanations=[replace(n, text=visible(n.text)) for n in step.explanations],
        error=_error(step.error) if step.error is not None else None,
        caught=caught,
        tensors={visible(n): _visible_record(r) for n, r in step.tensors.items()},
        arrays={visible(n): _visible_record(a) for n, a in step.arrays.items()},
        unlisted={visible(n): count for n, count in step.unlisted.items()},
    )
