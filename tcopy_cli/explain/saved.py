"""Rules about tensors autograd saved for backward and that a step changed afterwards."""

from __future__ import annotations

from collections.abc import Callable

from tcopy_cli.explain.facts import Bump, StepFacts, note
from tcopy_cli.trace.records import Note, SavedEvent


def _silent(ev: SavedEvent, named: list[str]) -> Note:
    return note(
        "saved.silent-change",
        f"silent gradient corruption: {ev.tensor}, which {ev.node} saved for backward (at version "
        f"{ev.saved_version}), changed without a version bump (a write through .data or another "
        f"untracked alias). The next backward will compute gradients from the changed values, and "
        f"torch will not complain.",
        named,
        severity="warning",
    )


def _bumped(ev: SavedEvent, named: list[str]) -> Note:
    return note(
        "saved.version-bump",
        f"{ev.tensor} was saved by {ev.node} for backward at version {ev.saved_version} and has now "
        f"been changed in place: a backward through {ev.node} will fail with a version error.",
        named,
    )


def _unchecked(ev: SavedEvent, named: list[str]) -> Note:
    return note(
        "saved.unchecked",
        f"{ev.tensor}, saved by {ev.node}, is too large for tcopy to watch for silent changes.",
        named,
    )


_NOTES: dict[str, Callable[[SavedEvent, list[str]], Note]] = {
    "silent": _silent,
    "bumped": _bumped,
    "unchecked": _unchecked,
}


def saved_tensor_events(f: StepFacts) -> list[Note]:
    """Silent changes (wrong gradients ahead), version bumps (a failing backward ahead), unwatched tensors.

    Remembers the changes, for the grads rule and for explaining a later version error.
    """
    out: list[Note] = []
    seen: set[tuple[str, str, str]] = set()
    step = f.step
    for ev in step.saved_events:
        key = (ev.kind, ev.node, ev.tensor)
        if key in seen or ev.kind not in _NOTES:
            continue
        seen.add(key)
        if ev.kind == "silent":
            f.state.corrupted.append(Bump(step.index, step.line, step.source, ev))
        elif ev.kind == "bumped":
            f.state.bumps.append(Bump(step.index, step.line, step.source, ev))
        # A saved tensor no name holds is described ("a 3 float32 tensor"), not named.
        affected = ev.affects if ev.kind == "silent" else ()
        out.append(_NOTES[ev.kind](ev, [t for t in (ev.tensor, *affected) if t in f.tensors]))
    return out
