"""Plain-language explanations of errors a step raised.

Each rule matches the exception type and torch's message and says why it happened
and how to fix it. Unknown errors keep torch's message and say so.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from tcopy_cli.explain.facts import StepFacts, note
from tcopy_cli.trace.records import ErrorInfo, Note

UNKNOWN = "tcopy knows no further explanation for this error; the message above is torch's (or Python's) own."


@dataclass(frozen=True)
class _Rule:
    types: tuple[str, ...]
    pattern: re.Pattern[str]
    explain: Callable[[re.Match[str]], str]


def _fixed(text: str) -> Callable[[re.Match[str]], str]:
    return lambda _m: text


_RULES: list[_Rule] = [
    _Rule(
        ("RuntimeError",),
        re.compile(
            r"one of the variables needed for gradient computation has been modified by an inplace "
            r"operation: \[(?P<what>.+?)\](?:, which is output \d+ of (?P<node>\w+))?, "
            r"is at version (?P<actual>\d+); expected version (?P<expected>\d+)",
            re.S,
        ),
        lambda m: (
            f"Autograd saved a tensor ({m['what']}) at version {m['expected']} to compute gradients, "
            f"but an in-place operation changed it afterwards (now at version {m['actual']}). "
            "Backward would use the changed values, so torch refuses. Fix: use the out-of-place "
            "form (e.g. x = x + 1 instead of x += 1 or x.add_(1)), or clone() the tensor before "
            "changing it in place."
        ),
    ),
    _Rule(
        ("RuntimeError",),
        re.compile(r"a leaf Variable that requires grad is being used in an in-place operation"),
        _fixed(
            "An in-place operation would overwrite a leaf tensor that requires grad; autograd "
            "could not compute its gradient afterwards. Fix: do the update under "
            "'with torch.no_grad():' (as optimizers do), or work on a clone()."
        ),
    ),
    _Rule(
        ("RuntimeError",),
        re.compile(r"Trying to backward through the graph a second time"),
        _fixed(
            "backward() frees the intermediate values it saved once it has used them. A second "
            "backward through the same graph finds them gone. Fix: pass retain_graph=True to the "
            "first backward() if you really need two, or recompute the forward pass."
        ),
    ),
    _Rule(
        ("RuntimeError",),
        re.compile(r"element 0 of tensors does not require grad and does not have a grad_fn"),
        _fixed(
            "backward() was called on a tensor that is not connected to any tensor requiring "
            "grad (no grad_fn), so there is nothing to differentiate. Typical causes: the inputs "
            "lack requires_grad=True, the result was computed under torch.no_grad(), or it came "
            "through detach()/.data. Fix: set requires_grad=True on the leaf before computing."
        ),
    ),
    _Rule(
        ("RuntimeError",),
        re.compile(r"grad can be implicitly created only for scalar outputs"),
        _fixed(
            "backward() without arguments only works on a single-element tensor. Fix: reduce to "
            "a scalar first (y.sum().backward()) or pass a gradient of y's shape "
            "(y.backward(torch.ones_like(y)))."
        ),
    ),
    _Rule(
        ("RuntimeError",),
        re.compile(r"Only Tensors created explicitly by the user \(graph leaves\) support the deepcopy protocol"),
        _fixed(
            "copy.deepcopy works only on leaf tensors; this tensor is the result of an operation "
            "(it has a grad_fn). Fix: deepcopy the leaf, or use t.detach().clone() for an "
            "independent copy, or t.clone() to stay in the graph."
        ),
    ),
    _Rule(
        ("RuntimeError",),
        re.compile(r"Expected all tensors to be on the same device|expected device|same device", re.I),
        _fixed(
            "The operation mixes tensors on different devices. Torch never moves data between "
            "devices implicitly. Fix: move one side with .to(other.device) (copy_ is the "
            "exception: it copies across devices)."
        ),
    ),
    _Rule(
        ("RuntimeError",),
        re.compile(
            r"(result type .* can't be cast to the desired output type"
            r"|expected (scalar type|m1 and m2 to have the same dtype)|found dtype)",
            re.I,
        ),
        _fixed(
            "The tensors have dtypes that this operation can't combine (in-place results must fit "
            "the target's dtype). Fix: convert one side with .to(dtype) or .float()/.long()."
        ),
    ),
    _Rule(
        ("RuntimeError",),
        re.compile(r"only Tensors of floating point( and complex)? dtype can require gradients", re.I),
        _fixed(
            "Gradients are defined only for floating-point (and complex) tensors; this tensor has "
            "an integer or bool dtype. Fix: create it as float (dtype=torch.float32, or 1.0 "
            "instead of 1)."
        ),
    ),
    _Rule(
        ("RuntimeError",),
        re.compile(r"can't be used as the input|Can't call numpy\(\) on Tensor that requires grad"),
        _fixed(
            "numpy() would share memory with a tensor autograd tracks, hiding changes from it. "
            "Fix: call t.detach().numpy() (still shares memory) or t.detach().cpu().numpy()."
        ),
    ),
    _Rule(
        ("LimitExceeded", "TimeoutExceeded"),
        re.compile(r".*", re.S),
        _fixed(
            "tcopy stopped this statement because it would exceed one of its resource limits; "
            "each limit has an option to raise it (see tcopy run --help)."
        ),
    ),
    _Rule(
        ("NotAllowedError",),
        re.compile(r".*", re.S),
        _fixed(
            "tcopy runs scripts in a sandbox that allows only listed torch functions, tensor "
            "methods and builtins; this use is not among them (see the README's script "
            "language section). If you trust the script, 'tcopy run --trust' runs it with "
            "real Python, not sandboxed."
        ),
    ),
    _Rule(
        ("NameError",),
        re.compile(r"name '(?P<name>[^']+)' is not defined"),
        lambda m: f"No statement before this one assigned '{m['name']}' (or it was deleted with del).",
    ),
]


def explain_error(type_name: str, message: str) -> str | None:
    """A plain-language explanation for an error, or None when no rule knows it."""
    for rule in _RULES:
        if type_name in rule.types:
            m = rule.pattern.search(message)
            if m:
                return rule.explain(m)
    return None


def explain_step_error(f: StepFacts, error: ErrorInfo) -> ErrorInfo:
    """The step's error with its explanation, naming earlier steps where the facts allow."""
    message = error.message
    state = f.state
    base = explain_error(error.type, message)
    if "modified by an inplace operation" in message:
        m = re.search(r"output \d+ of (\w+)", message)
        op = m[1] if m else None
        candidates = [b for b in state.bumps if op is None or b.event.node.startswith(op)] or state.bumps
        if candidates:
            b = candidates[-1]
            return _explained(
                error,
                f"{b.event.node} saved {b.event.tensor} at version {b.event.saved_version} to compute "
                f"gradients; the earlier step {b.index} (line {b.line}: {b.source}) changed it in place "
                f"afterwards, so backward refuses to use it. Fix: use an out-of-place operation there "
                f"(e.g. y = y * 2 instead of y.mul_(2) or y *= 2), or clone() before the in-place change.",
            )
    if "backward through the graph a second time" in message and state.backward_steps:
        return _explained(
            error,
            f"The graph was already used by the backward in step {state.backward_steps[-1]}, which freed the "
            f"values it had saved. " + (base or UNKNOWN),
        )
    if base is None:
        return ErrorInfo(error.type, error.message, UNKNOWN, explained=False)
    return _explained(error, base)


def _explained(error: ErrorInfo, text: str) -> ErrorInfo:
    return ErrorInfo(error.type, error.message, text, explained=True)


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
