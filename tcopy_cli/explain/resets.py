"""A training loop that never resets its gradients: each backward adds to the last turn's.

Told where it starts (the first turn whose backward added into a ``.grad`` that the backward of
an earlier turn filled, with nothing resetting it in between, after the tensor was updated from
that gradient) and, shorter, in each later turn where it happens again (the loop summary gathers
those: ``render.loops``). Everything is measured: backward passes since the last reset
(``ExplainState.backward_counts``, read from the grad's version counter by ``grads.grad_changes``),
the loop turn of each backward, and an update in between (the tensor's version or values moved).
Gradient accumulation on purpose (several backward passes, then one update and a reset) is not
told: no update comes between its backward passes.

The fix names the optimizer whose ``step()`` made the update (from that statement's syntax), a
module's ``zero_grad()`` for its parameters, else ``.grad = None``; and the line of the backward
to put it before.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from tcopy_cli.explain.facts import Origin, StepFacts, agree, names_text, note
from tcopy_cli.explain.grads import RECEIVED
from tcopy_cli.trace.records import Note, TensorRecord
from tcopy_cli.trace.scriptnames import script_name
from tcopy_cli.trace.values import code_span

KIND = "grad.not-reset"


@dataclass(frozen=True)
class _Backward:
    """The last backward into one tensor's grad, inside a loop."""

    loop: tuple[int, int]
    iteration: int
    version: int
    values: object
    preview: str
    step: int


@dataclass
class _Resets:
    last: dict[int, _Backward] = field(default_factory=dict)
    """By tensor identity."""
    told: set[tuple[int, int]] = field(default_factory=set)
    """Loops (line, entry) where the full note was given."""


def grads_not_reset(f: StepFacts) -> list[Note]:
    """``.grad`` that a backward in this turn added to the last turn's, after an update in between."""
    if not f.step.loops:
        return []
    state = f.state.extra.setdefault("resets", _Resets())
    assert isinstance(state, _Resets)
    loop = f.step.loops[-1]
    key, turn = (loop.line, loop.entry), loop.iteration
    found: list[tuple[str, _Backward]] = []
    seen: set[int] = set()
    for n in f.notes:
        if n.kind not in RECEIVED:
            continue
        for name in n.tensors:
            r = f.tensors.get(name)
            if r is None or r.object_id in seen or r.grad is None:
                continue
            seen.add(r.object_id)
            prev = state.last.get(r.object_id)
            count = f.state.backward_counts.get(r.object_id)
            if (
                n.kind == "grad.accumulated"
                and prev is not None
                and prev.loop == key
                and prev.iteration < turn
                and count is not None
                and count >= 2
                and _updated(prev, r)
            ):
                found.append((name, prev))
            state.last[r.object_id] = _Backward(key, turn, r.version, r.values, r.preview, f.step.index)
    if not found:
        return []
    names = [name for name, _ in found]
    first = min(prev.iteration for _, prev in found)
    update = _update(f, found)
    fix = _fix(names, update)
    backward = f"{code_span(f.step.source)} (line {f.step.line})"
    grads = names_text([n + ".grad" for n in names])
    if key in state.told:
        return [
            note(
                KIND,
                f"{grads} again not reset since the last turn's backward: add {code_span(fix)} before {backward}.",
                names,
                fix=fix,
            )
        ]
    state.told.add(key)
    used = (
        f"{code_span(update.source)} (line {update.line}) had already used {agree(names, 'it', 'them')} to update "
        f"{names_text(names)}"
        if update is not None
        else f"{names_text(names)} changed since then"
    )
    them = agree(names, "it", "them")
    return [
        note(
            KIND,
            f"{grads} {agree(names, 'was', 'were')} not reset since the backward of turn {first}: this backward "
            f"added this turn's gradient to what was left there, and {used}. Nothing reset {them} in between (no "
            f"zero_grad(), no .grad = None), so each turn's gradient is added to the sum of all the turns before "
            f"and each update uses that sum. If each update should use only its own turn's gradient, add "
            f"{code_span(fix)} in the loop before {backward}.",
            names,
            severity="warning",
            fix=fix,
        )
    ]


def _updated(prev: _Backward, r: TensorRecord) -> bool:
    """The tensor changed since that backward: its version moved, or its values (through ``.data``)."""
    if r.version != prev.version:
        return True
    if r.values is not None or prev.values is not None:
        return bool(r.values != prev.values)
    return r.preview != prev.preview


def _update(f: StepFacts, found: list[tuple[str, _Backward]]) -> Origin | None:
    """The last step, after the earlier backward, that moved the version of a tensor told."""
    moves = [
        origin
        for name, prev in found
        for origin in f.state.version_moves.get(name, [])
        if prev.step < origin.index < f.step.index
    ]
    return max(moves, key=lambda o: o.index) if moves else None


def _fix(names: list[str], update: Origin | None) -> str:
    """The line that resets the grads: the optimizer's zero_grad() where its step() made the update."""
    optimizer = _stepped(update.source) if update is not None else None
    if optimizer is not None:
        return f"{optimizer}.zero_grad()"
    plain = [script_name(n) for n in names]
    owners = {n.split(".", 1)[0] for n in plain if "." in n and "[" not in n}
    if len(owners) == 1 and all("." in n for n in plain):
        return f"{owners.pop()}.zero_grad()"
    return "; ".join(f"{n}.grad = None" for n in plain)


def _stepped(source: str) -> str | None:
    """``opt`` of a statement that calls ``opt.step()``."""
    try:
        tree = ast.parse(source.strip())
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "step"
            and isinstance(node.func.value, (ast.Name, ast.Attribute))
        ):
            return ast.unparse(node.func.value)
    return None
