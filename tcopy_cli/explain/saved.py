"""Rules about tensors autograd saved for backward and that a step changed afterwards."""

from __future__ import annotations

from tcopy_cli.explain.facts import Bump, StepFacts, note
from tcopy_cli.trace.records import Note


def saved_tensor_events(f: StepFacts) -> list[Note]:
    """Silent changes (wrong gradients ahead), version bumps (a failing backward ahead), unwatched tensors.

    Remembers the changes, for the grads rule and for explaining a later version error.
    """
    out: list[Note] = []
    seen: set[tuple[str, str, str]] = set()
    step = f.step
    for ev in step.saved_events:
        key = (ev.kind, ev.node, ev.tensor)
        if key in seen:
            continue
        seen.add(key)
        if ev.kind == "silent":
            f.state.corrupted.append(Bump(step.index, step.line, step.source, ev))
            out.append(
                note(
                    "saved.silent-change",
                    f"silent gradient corruption: {ev.tensor}, which {ev.node} saved for backward (at version "
                    f"{ev.saved_version}), changed without a version bump (a write through .data or another "
                    f"untracked alias). The next backward will compute gradients from the changed values, and "
                    f"torch will not complain.",
                    _named(f, ev.tensor, *ev.affects),
                    severity="warning",
                )
            )
        elif ev.kind == "bumped":
            f.state.bumps.append(Bump(step.index, step.line, step.source, ev))
            out.append(
                note(
                    "saved.version-bump",
                    f"{ev.tensor} was saved by {ev.node} for backward at version {ev.saved_version} and has now "
                    f"been changed in place: a backward through {ev.node} will fail with a version error.",
                    _named(f, ev.tensor),
                )
            )
        elif ev.kind == "unchecked":
            out.append(
                note(
                    "saved.unchecked",
                    f"{ev.tensor}, saved by {ev.node}, is too large for tcopy to watch for silent changes.",
                    _named(f, ev.tensor),
                )
            )
    return out


def _named(f: StepFacts, *tensors: str) -> list[str]:
    # A saved tensor no name holds is described ("a 3 float32 tensor"), not named.
    return [t for t in tensors if t in f.tensors]
