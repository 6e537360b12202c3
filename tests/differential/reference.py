"""The plain-Python reference for the differential tests (tests/differential/test_corpus.py).

``run_reference({name: source, ...})`` starts one fresh process of the same
interpreter (``sys.executable``) that runs this file as a script. That process runs
every script in turn with ordinary Python: it parses the script with ``ast``,
``exec``s one top-level statement at a time (compiled from the original AST, so
line numbers are the script's), captures what the statements print and the warnings
they raise, stops at the first exception, and dumps the final state as JSON. Nothing
of tcopy is imported there: the reference is independent of the tool it checks.

How the reference counts steps, to compare with tcopy's step count: every simple
statement that runs is one step (each loop iteration counts again); ``pass``,
``break`` and ``continue`` are not steps; block headers (``for``/``if``/``with``) are
not steps unless evaluating them fails, in which case the failure is one step.

The error line is the line where the failing statement starts: the innermost simple
statement that contains the line of the script frame of the traceback, or the header
of the ``for``/``if``/``with`` whose header failed.

A second mode, for the snippets corpus (tests/corpus/snippets; ``start_reference(..., mode="snippets")``),
runs each script with ``run_snippet``: no step counting (tcopy makes steps inside
function bodies, which this reference does not mirror), the error line taken from the
innermost statement at any depth (inside functions and methods too), the lines run
inside script functions, and a final state that also holds the parameters and buffers
of ``nn.Module`` objects bound to global names (``model.fc.weight``).

Only the standard library is imported at module level; torch and numpy are imported
inside the child process.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

SCRIPT_FILENAME = "<script>"
STEP_HOOK = "__tcopy_reference_step__"
MAX_VALUES = 100  # tcopy's default --max-values: above it, "values" is null
_NOT_STEPS = (ast.Pass, ast.Break, ast.Continue)
_BLOCKS = (ast.For, ast.If, ast.With)
MODES = ("statements", "snippets")


# --- parent side ---------------------------------------------------------------------


def start_reference(sources: dict[str, str], workdir: Path, mode: str = "statements") -> subprocess.Popen[str]:
    """Start the reference process for ``sources`` ({name: source}); see ``collect_reference``.

    The sources go to the child in a file under ``workdir`` and the results come back in
    another (the scripts' own output can't mix with them), so the caller can do other
    work (start tcopy processes) while the child runs. ``mode`` is ``"statements"``
    (``run_one``, for the basics corpus) or ``"snippets"`` (``run_snippet``,
    for the snippets corpus).
    """
    if mode not in MODES:
        raise ValueError(f"unknown reference mode {mode!r}")
    request = workdir / f"reference-{mode}-sources.json"
    request.write_text(json.dumps(sources), encoding="utf-8")
    results = workdir / f"reference-{mode}-results.json"
    return subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), str(request), str(results), mode],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def collect_reference(proc: subprocess.Popen[str], timeout: float = 240.0) -> dict[str, dict[str, Any]]:
    """Wait for a process from ``start_reference``; name -> result (see ``run_reference``)."""
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if proc.returncode != 0:
        raise RuntimeError(f"the reference process failed ({proc.returncode}):\n{out}\n{err}")
    args = proc.args
    assert isinstance(args, list)
    results_file = args[-1] if args[-1] not in MODES else args[-2]
    results: dict[str, dict[str, Any]] = json.loads(Path(results_file).read_text(encoding="utf-8"))
    return results


def run_reference(sources: dict[str, str], timeout: float = 240.0) -> dict[str, dict[str, Any]]:
    """Run each script under plain Python in one fresh subprocess; name -> result.

    A result is ``{"stdout", "warnings", "error", "steps", "step_lines",
    "statements_total", "completed", "state"}``: ``step_lines`` is the line of every
    step in execution order, ``completed`` the number of top-level statements that
    finished, ``error`` null or ``{"type", "line", "message"}``, and ``state`` the
    final state (see ``final_state``).
    """
    with tempfile.TemporaryDirectory() as tmp:
        return collect_reference(start_reference(sources, Path(tmp)), timeout)


# --- child side: running a script ----------------------------------------------------


def _step_call(node: ast.stmt) -> ast.stmt:
    call = ast.Expr(ast.Call(ast.Name(STEP_HOOK, ast.Load()), [ast.Constant(node.lineno)], []))
    return ast.copy_location(call, node)


def instrument(body: list[ast.stmt]) -> list[ast.stmt]:
    """Put a step-recording call (with the line) before every statement that tcopy reports as a step."""
    out: list[ast.stmt] = []
    for stmt in body:
        if isinstance(stmt, _BLOCKS):
            stmt.body = instrument(stmt.body)
            if isinstance(stmt, (ast.For, ast.If)):
                stmt.orelse = instrument(stmt.orelse)
            out.append(stmt)
        elif isinstance(stmt, _NOT_STEPS):
            out.append(stmt)
        else:
            out.extend([_step_call(stmt), stmt])
    return out


def locate(body: list[ast.stmt], line: int) -> tuple[ast.stmt, bool] | None:
    """The innermost statement that contains ``line``, and whether it is a block header."""
    for stmt in body:
        end = stmt.end_lineno or stmt.lineno
        if not stmt.lineno <= line <= end:
            continue
        if isinstance(stmt, _BLOCKS):
            if line < stmt.body[0].lineno:
                return stmt, True
            found = locate(stmt.body, line)
            if found is None and isinstance(stmt, (ast.For, ast.If)):
                found = locate(stmt.orelse, line)
            return found if found is not None else (stmt, True)
        return stmt, False
    return None


def _script_line(exc: BaseException) -> int | None:
    line = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == SCRIPT_FILENAME:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def fresh_warn_once() -> None:
    """Let torch's once-per-process warnings (TypedStorage is deprecated ...) fire again, as in
    a fresh ``python script.py``: every script, on either side, sees them whatever ran before."""
    import torch.storage

    torch.storage._warn_typed_storage_removal.__dict__.pop("has_warned", None)


def run_one(source: str) -> dict[str, Any]:
    """Run one script statement by statement; its output, error, step count and final state."""
    import builtins
    import contextlib
    import io
    import warnings

    import torch

    # Scripts run one after another in this process: start each from torch's defaults
    # (tcopy restores these after a run too).
    torch.set_grad_enabled(True)
    torch.set_default_dtype(torch.float32)
    tree = ast.parse(source, filename=SCRIPT_FILENAME)
    fresh_warn_once()
    original = ast.parse(source, filename=SCRIPT_FILENAME)
    step_lines: list[int] = []
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins, STEP_HOOK: step_lines.append}
    stdout = io.StringIO()
    warned: list[str] = []
    error: dict[str, Any] | None = None
    completed = 0
    for stmt in tree.body:
        module = ast.fix_missing_locations(ast.Module(body=instrument([stmt]), type_ignores=[]))
        code = compile(module, SCRIPT_FILENAME, "exec")
        with contextlib.redirect_stdout(stdout), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                exec(code, namespace)
            except Exception as exc:
                line = _script_line(exc)
                found = locate(original.body, line) if line is not None else None
                error = {
                    "type": type(exc).__name__,
                    "line": found[0].lineno if found is not None else line,
                    "message": str(exc),
                }
                if found is not None and found[1]:
                    step_lines.append(found[0].lineno)  # a failing block header is reported as one step
        warned.extend(str(w.message) for w in caught)
        if error is not None:
            break
        completed += 1
    return {
        "stdout": stdout.getvalue(),
        "warnings": warned,
        "error": error,
        "steps": len(step_lines),
        "step_lines": step_lines,
        "statements_total": len(tree.body),
        "completed": completed,
        "state": final_state(namespace),
    }


# --- child side: snippets with functions, classes and modules (tests/corpus/snippets) ---


def locate_innermost(body: list[ast.stmt], line: int) -> ast.stmt | None:
    """The innermost statement whose lines contain ``line``, looking into every kind of block.

    Unlike ``locate`` this descends into ``def``, ``class``, ``while`` and ``try`` bodies
    (handlers, ``else`` and ``finally`` too). A line in a block's header gives the block.
    """
    for stmt in body:
        if not stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno):
            continue
        bodies = [getattr(stmt, f) for f in ("body", "orelse", "finalbody") if isinstance(getattr(stmt, f, None), list)]
        bodies += [handler.body for handler in getattr(stmt, "handlers", [])]
        for sub in bodies:
            found = locate_innermost(sub, line)
            if found is not None:
                return found
        return stmt
    return None


_COMPOUND = (ast.For, ast.While, ast.If, ast.With, ast.Try, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)


def _line_tracer(lines: set[int]) -> Any:
    """A ``sys.settrace`` function that records the lines run in the script's function frames.

    Function frames are those of ``def`` bodies, methods, lambdas and comprehensions
    (code with CO_OPTIMIZED); module and class-body frames are left out, as is every
    frame outside the script (torch's own Python code is not traced line by line). So
    are the frames of script functions that autograd calls as hooks during
    ``backward()`` or ``torch.autograd.grad`` (and whatever they call): tcopy runs those
    within the step of the statement that started the backward pass.
    """
    import inspect
    import os

    autograd_dir = f"{os.sep}torch{os.sep}autograd{os.sep}"

    def under_autograd(frame: Any) -> bool:
        caller = frame.f_back
        while caller is not None:
            if autograd_dir in caller.f_code.co_filename:
                return True
            caller = caller.f_back
        return False

    def local(frame: Any, event: str, arg: Any) -> Any:
        if event == "line":
            lines.add(frame.f_lineno)
        return local

    def start(frame: Any, event: str, arg: Any) -> Any:
        code = frame.f_code
        if code.co_filename == SCRIPT_FILENAME and code.co_flags & inspect.CO_OPTIMIZED and not under_autograd(frame):
            return local
        return None

    return start


def run_snippet(source: str) -> dict[str, Any]:
    """Run one script a top-level statement at a time; output, error, lines run in functions, final state.

    For scripts with ``def``, ``class``, ``try`` and ``while``, where tcopy makes steps
    inside function bodies: there is no step count here. The result is ``{"stdout",
    "warnings", "error", "statements_total", "completed", "function_lines", "state"}``.
    ``error`` is null or ``{"type", "line", "message"}`` where ``line`` is the first line
    of the innermost statement (at any depth, inside functions and methods too) that
    contains the line of the innermost script frame of the traceback.
    ``function_lines`` lists, sorted, the first lines of the simple statements (other
    than ``pass``/``break``/``continue``) that ran inside script functions and methods,
    except in hooks that autograd called (see ``_line_tracer``).
    ``state`` is ``final_state`` with module parameters and buffers.
    """
    import builtins
    import contextlib
    import io
    import warnings

    import torch

    torch.set_grad_enabled(True)
    torch.set_default_dtype(torch.float32)
    tree = ast.parse(source, filename=SCRIPT_FILENAME)
    fresh_warn_once()
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins}
    stdout = io.StringIO()
    warned: list[str] = []
    error: dict[str, Any] | None = None
    completed = 0
    traced: set[int] = set()
    for stmt in tree.body:
        code = compile(ast.Module(body=[stmt], type_ignores=[]), SCRIPT_FILENAME, "exec")
        with contextlib.redirect_stdout(stdout), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            previous = sys.gettrace()
            sys.settrace(_line_tracer(traced))
            try:
                exec(code, namespace)
            except Exception as exc:
                line = _script_line(exc)
                found = locate_innermost(tree.body, line) if line is not None else None
                error = {
                    "type": type(exc).__name__,
                    "line": found.lineno if found is not None else line,
                    "message": str(exc),
                }
            finally:
                sys.settrace(previous)
        warned.extend(str(w.message) for w in caught)
        if error is not None:
            break
        completed += 1
    function_lines = set()
    for line in traced:
        found = locate_innermost(tree.body, line)
        if found is not None and not isinstance(found, (*_COMPOUND, *_NOT_STEPS)):
            function_lines.add(found.lineno)
    return {
        "stdout": stdout.getvalue(),
        "warnings": warned,
        "error": error,
        "statements_total": len(tree.body),
        "completed": completed,
        "function_lines": sorted(function_lines),
        "state": final_state(namespace, modules=True),
    }


# --- child side: the final state -----------------------------------------------------


def json_values(v: Any) -> Any:
    """tolist() output with non-finite floats as "nan"/"inf"/"-inf" and complex as text."""
    import math

    if isinstance(v, list):
        return [json_values(x) for x in v]
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
    if isinstance(v, complex):
        return str(v)
    return v


def named_values(namespace: dict[str, Any], modules: bool = False) -> list[tuple[str, Any]]:
    """(display name, tensor or array) for every global name, looking into lists, tuples and dicts.

    With ``modules``, an ``nn.Module`` bound to a global name contributes its parameters
    and buffers as ``name.weight``, ``name.fc.bias`` (``named_parameters()`` and
    ``named_buffers()``, so a parameter shared by two submodules is listed once).
    """
    import numpy as np
    import torch

    out: list[tuple[str, Any]] = []

    def walk(name: str, value: Any, depth: int) -> None:
        if isinstance(value, (torch.Tensor, np.ndarray)):
            out.append((name, value))
        elif modules and depth == 0 and isinstance(value, torch.nn.Module):
            for key, param in value.named_parameters():
                out.append((f"{name}.{key}", param))
            for key, buffer in value.named_buffers():
                out.append((f"{name}.{key}", buffer))
        elif depth < 3 and isinstance(value, (list, tuple)) and not isinstance(value, torch.Size):
            for i, item in enumerate(value):
                walk(f"{name}[{i}]", item, depth + 1)
        elif depth < 3 and isinstance(value, dict):
            for k, item in value.items():
                key = f'"{k}"' if isinstance(k, str) else repr(k)
                walk(f"{name}[{key}]", item, depth + 1)

    for name, value in namespace.items():
        if not name.startswith("__"):
            walk(name, value, 0)
    return out


def _tensor_facts(t: Any) -> dict[str, Any]:
    return {
        "shape": list(t.shape),
        "dtype": str(t.dtype).removeprefix("torch."),
        "values": json_values(t.detach().tolist()) if t.numel() <= MAX_VALUES else None,
    }


def _version(t: Any) -> int:
    try:
        return int(t._version)
    except RuntimeError:  # inference tensors have no version counter; tcopy reports -1
        return -1


def _pairs(names_by_key: dict[Any, list[str]]) -> list[list[str]]:
    pairs = set()
    for names in names_by_key.values():
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                pairs.add(tuple(sorted((a, b))))
    return sorted(list(p) for p in pairs)


def final_state(namespace: dict[str, Any], modules: bool = False) -> dict[str, Any]:
    """Every tensor's and array's facts, and which of them share memory.

    ``modules``: also the parameters and buffers of modules bound to names (see
    ``named_values``).

    ``tensors``: name -> shape, dtype, values, requires_grad, is_leaf, grad_fn,
    version, storage_offset and grad (shape, dtype, values; read only where torch
    reads it silently: leaves and tensors that retain their grad).
    ``arrays``: name -> shape, dtype, values.
    ``storage_pairs``: pairs of names (gradients as ``name.grad``) whose untyped
    storages start at the same address. ``data_ptr_pairs``: pairs with equal
    ``data_ptr()``. ``array_pairs``: an array name with each tensor or array name
    whose memory overlaps it.
    """
    import numpy as np

    tensors: dict[str, Any] = {}
    arrays: dict[str, Any] = {}
    members: list[tuple[str, Any]] = []
    array_items: list[tuple[str, Any]] = []
    for name, value in named_values(namespace, modules):
        if isinstance(value, np.ndarray):
            arrays[name] = {
                "shape": list(value.shape),
                "dtype": str(value.dtype),
                "values": json_values(value.tolist()) if value.size <= MAX_VALUES else None,
            }
            array_items.append((name, value))
            continue
        grad = value.grad if (value.is_leaf or value.retains_grad) else None
        facts = _tensor_facts(value)
        facts.update(
            requires_grad=bool(value.requires_grad),
            is_leaf=bool(value.is_leaf),
            grad_fn=type(value.grad_fn).__name__ if value.grad_fn is not None else None,
            version=_version(value),
            storage_offset=int(value.storage_offset()),
            grad=_tensor_facts(grad) if grad is not None else None,
        )
        tensors[name] = facts
        members.append((name, value))
        if grad is not None:
            members.append((f"{name}.grad", grad))

    by_storage: dict[Any, list[str]] = {}
    by_ptr: dict[Any, list[str]] = {}
    for name, t in members:
        storage = t.untyped_storage()
        # Empty storages all sit at address 0 but share nothing: give each its own key.
        key = storage.data_ptr() if storage.nbytes() else ("empty", name)
        by_storage.setdefault(key, []).append(name)
        by_ptr.setdefault(t.data_ptr() if storage.nbytes() else ("empty", name), []).append(name)

    def as_array(t: Any) -> Any:
        try:
            return t.detach().numpy()
        except (RuntimeError, TypeError):
            return None

    overlaps = set()
    others = [(n, as_array(t)) for n, t in members] + array_items
    for name, arr in array_items:
        for other, oarr in others:
            if other != name and oarr is not None and np.shares_memory(arr, oarr):
                overlaps.add(tuple(sorted((name, other))))
    return {
        "tensors": tensors,
        "arrays": arrays,
        "storage_pairs": _pairs(by_storage),
        "data_ptr_pairs": _pairs(by_ptr),
        "array_pairs": sorted(list(p) for p in overlaps),
    }


def main() -> None:
    """Child process: {name: source} from the JSON file argv[1]; {name: result} to the JSON file argv[2].

    argv[3], if given, is the mode (``MODES``); the default runs ``run_one``.
    """
    sources: dict[str, str] = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    mode = sys.argv[3] if len(sys.argv) > 3 else "statements"
    run = run_snippet if mode == "snippets" else run_one
    results: dict[str, Any] = {}
    for name, source in sources.items():
        results[name] = run(source)
    Path(sys.argv[2]).write_text(json.dumps(results, allow_nan=False), encoding="utf-8")


if __name__ == "__main__":
    main()
