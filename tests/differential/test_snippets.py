"""Snippets as people post them: tcopy against plain Python on the scripts in tests/corpus/snippets/.

The scripts use the language added for user code: module-level ``def`` (defaults,
keywords, recursion), ``lambda`` and script functions as autograd hooks, ``nn.Module``
subclasses, ``try``/``except``/``else``/``finally``, ``assert``, ``raise``, ``while``,
comprehensions, ``map``/``zip``/``enumerate``/``sorted``/``reversed``/``all``/``any``,
``import torch.nn as nn`` and friends, optimizers, ``state_dict``, ``copy.deepcopy`` of a
model, ``torch.autograd.grad``, ``Variable`` and NumPy arrays.

Every script runs in process under tcopy (``run_source``) and under plain Python in one
separate process (``differential.run_snippet``, all scripts in one batch). tcopy makes a
step of every statement inside a called function, which the reference does not mirror,
so step counts are not compared. Compared: the printed text (addresses normalised), the
warnings, the error type and line (the line of the innermost statement that failed, in
a function body if that is where it was raised), and the final state: every tensor bound
to a global name and every parameter and buffer of an ``nn.Module`` bound to a global
name (``model.fc.weight``), with values, gradient, requires_grad, is_leaf, grad_fn name,
version counter, shape, dtype, storage offset, and which names share memory.

Beyond the differential: every simple statement that plain Python ran inside a script
function is a step; function locals (``fn:name``) show only while the function runs;
a lambda hook's output lands in the step of the ``backward()`` that called it.

A script whose comment lines include ``# expect-error: TYPE`` must end with that error
under plain Python; every other script must run to the end without one.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

import pytest
from reference import collect_reference, start_reference
from test_differential import tcopy_state

CORPUS_DIR = Path(__file__).resolve().parent.parent / "corpus" / "snippets"
CORPUS = sorted(CORPUS_DIR.glob("*.py"))
NAMES = [p.name for p in CORPUS]
EXPECT_ERROR = re.compile(r"^#\s*expect-error:\s*(\w+)\s*$", re.MULTILINE)
ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
# A function's local while it runs: "fn:name", "Cls.fn:name[0]", "fn:name.grad".
LOCAL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*:")
RANDOM_INIT = re.compile(r"torch\.randn?\(|nn\.(Linear|Conv[12]d|Embedding|LayerNorm|BatchNorm1d|Dropout)\(")
MAX_LINES = 30


def _source(name: str) -> str:
    return (CORPUS_DIR / name).read_text(encoding="utf-8")


def _addresses_normalised(text: str) -> str:
    return ADDRESS.sub("0x<addr>", text)


def _tcopy(name: str) -> dict[str, Any]:
    from tcopy_cli.errors import ScriptRejected
    from tcopy_cli.trace import run_source

    try:
        trace = run_source(_source(name), origin=name)
    except ScriptRejected as exc:
        return {"crash": f"tcopy refused the script at {exc.line}:{exc.column}: {exc.message}"}
    except Exception as exc:  # a crash of tcopy itself fails this script's tests only
        return {"crash": f"run_source raised {type(exc).__name__}: {exc}"}
    assert trace.summary is not None
    steps = [json.loads(json.dumps(step.to_json(), allow_nan=False)) for step in trace.steps]
    return {"crash": None, "steps": steps, "end": trace.summary.to_json()}


@pytest.fixture(scope="session")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Both sides for every script: name -> {"ref": ..., "tcopy": ...}.

    The reference process starts first and runs while tcopy runs the scripts here.
    """
    reference = start_reference({n: _source(n) for n in NAMES}, tmp_path_factory.mktemp("snippets"), mode="snippets")
    try:
        tcopy = {n: _tcopy(n) for n in NAMES}
    finally:
        ref = collect_reference(reference)
    return {n: {"ref": ref[n], "tcopy": tcopy[n]} for n in NAMES}


def _both(runs: dict[str, Any], name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(reference result, tcopy result); fails the test if tcopy refused or crashed on the script."""
    tc = runs[name]["tcopy"]
    if tc["crash"] is not None:
        pytest.fail(tc["crash"], pytrace=False)
    if not tc["steps"]:
        pytest.fail("tcopy ran no steps", pytrace=False)
    return runs[name]["ref"], tc


def _is_local(name: str) -> bool:
    return LOCAL_NAME.match(name) is not None


def _module_state(step: dict[str, Any]) -> dict[str, Any]:
    """tcopy's state after ``step`` without function locals (plain Python's globals only)."""
    state = tcopy_state(step)
    state["tensors"] = {n: facts for n, facts in state["tensors"].items() if not _is_local(n)}
    state["arrays"] = {n: facts for n, facts in state["arrays"].items() if not _is_local(n)}
    for key in ("storage_pairs", "shares_memory_pairs", "data_ptr_pairs", "array_pairs"):
        state[key] = [pair for pair in state[key] if not any(_is_local(n) for n in pair)]
    return state


def _function_ranges(source: str) -> list[tuple[int, int]]:
    """(first, last) line of every module-level ``def`` and ``class``."""
    tree = ast.parse(source)
    return [
        (node.lineno, node.end_lineno or node.lineno)
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.ClassDef))
    ]


# --- the corpus itself ---------------------------------------------------------------


def test_corpus_is_large_enough() -> None:
    assert len(CORPUS) >= 22


@pytest.mark.parametrize("name", NAMES)
def test_script_is_a_short_titled_seeded_snippet(name: str) -> None:
    source = _source(name)
    lines = source.splitlines()
    assert source.startswith("# ") and len(lines[0]) > 3, "first line must be a '# title' comment"
    assert len(lines) <= MAX_LINES
    code = "\n".join(line for line in lines if not line.lstrip().startswith("#"))
    first_random = RANDOM_INIT.search(code)
    if first_random is not None:
        seed = code.find("torch.manual_seed(0)")
        assert 0 <= seed < first_random.start(), "torch.manual_seed(0) must come before any random init"


@pytest.mark.parametrize("name", NAMES)
def test_reference_runs_as_intended(name: str, runs: dict[str, Any]) -> None:
    ref = runs[name]["ref"]
    expected = EXPECT_ERROR.search(_source(name))
    if expected is None:
        assert ref["error"] is None, f"plain Python failed: {ref['error']}"
        assert ref["completed"] == ref["statements_total"]
    else:
        assert ref["error"] is not None and ref["error"]["type"] == expected.group(1), ref["error"]


# --- tcopy against plain Python ------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_error(name: str, runs: dict[str, Any]) -> None:
    """Same error type and line (tcopy: its first error step), or none on both sides.

    A caught error is no error step: its statement is a step with status ok.
    """
    ref, tc = _both(runs, name)
    errors = [s for s in tc["steps"] if s["status"] == "error"]
    got = {"type": errors[0]["error"]["type"], "line": errors[0]["line"]} if errors else None
    want = {"type": ref["error"]["type"], "line": ref["error"]["line"]} if ref["error"] else None
    assert got == want
    assert tc["end"]["status"] == ("error" if want else "ok")
    if errors:
        assert tc["steps"][-1]["status"] == "error", "without --keep-going the run ends at the error"


@pytest.mark.parametrize("name", NAMES)
def test_printed_text(name: str, runs: dict[str, Any]) -> None:
    """What print() wrote, hooks called by backward included, in order."""
    ref, tc = _both(runs, name)
    printed = "".join(s["stdout"] for s in tc["steps"])
    assert _addresses_normalised(printed) == _addresses_normalised(ref["stdout"])


@pytest.mark.parametrize("name", NAMES)
def test_warnings(name: str, runs: dict[str, Any]) -> None:
    ref, tc = _both(runs, name)
    warned = [w for s in tc["steps"] for w in s["warnings"]]
    assert warned == ref["warnings"]


@pytest.mark.parametrize("name", NAMES)
def test_tensor_names(name: str, runs: dict[str, Any]) -> None:
    """Global tensors, tensors in global containers, module parameters and buffers."""
    ref, tc = _both(runs, name)
    state = _module_state(tc["steps"][-1])
    assert sorted(state["tensors"]) == sorted(ref["state"]["tensors"])
    assert sorted(state["arrays"]) == sorted(ref["state"]["arrays"])


@pytest.mark.parametrize("name", NAMES)
def test_tensor_facts(name: str, runs: dict[str, Any]) -> None:
    """Values, grads, requires_grad, is_leaf, grad_fn, version, shape, dtype, offset: exactly equal."""
    ref, tc = _both(runs, name)
    ref_state, state = ref["state"], _module_state(tc["steps"][-1])
    differ = {
        n: {"tcopy": state["tensors"].get(n), "python": ref_state["tensors"][n]}
        for n in ref_state["tensors"]
        if state["tensors"].get(n) != ref_state["tensors"][n]
    }
    assert not differ
    assert state["arrays"] == ref_state["arrays"]


@pytest.mark.parametrize("name", NAMES)
def test_memory_sharing(name: str, runs: dict[str, Any]) -> None:
    """Same storage-sharing pairs (state_dict entries and parameters included), data_ptr pairs, array overlaps."""
    ref, tc = _both(runs, name)
    ref_state, state = ref["state"], _module_state(tc["steps"][-1])
    assert state["storage_pairs"] == ref_state["storage_pairs"], "pairs with the same storage label"
    assert state["shares_memory_pairs"] == ref_state["storage_pairs"], "pairs listed in shares_memory_with"
    assert state["data_ptr_pairs"] == ref_state["data_ptr_pairs"]
    assert state["array_pairs"] == ref_state["array_pairs"]


# --- steps inside functions ----------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_statements_run_inside_functions_are_steps(name: str, runs: dict[str, Any]) -> None:
    """Every simple statement plain Python ran in a def body or method is a step of its own line.

    Hooks that autograd calls are the exception: they run within the backward step.
    """
    ref, tc = _both(runs, name)
    step_lines = {s["line"] for s in tc["steps"]}
    assert sorted(set(ref["function_lines"]) - step_lines) == []


@pytest.mark.parametrize("name", NAMES)
def test_function_locals_only_while_it_runs(name: str, runs: dict[str, Any]) -> None:
    """After a module-level statement no ``fn:name`` is left; the index counts every step."""
    _, tc = _both(runs, name)
    inside = _function_ranges(_source(name))
    for step in tc["steps"]:
        if any(first <= step["line"] <= last for first, last in inside):
            continue
        leftover = [n for n in step["tensors"] if _is_local(n)]
        assert leftover == [], f"line {step['line']}: {step['source']!r}"
    assert [s["index"] for s in tc["steps"]] == list(range(1, len(tc["steps"]) + 1))
    assert tc["end"]["steps"] == len(tc["steps"])


def _steps_at(tc: dict[str, Any], line: int) -> list[dict[str, Any]]:
    return [s for s in tc["steps"] if s["line"] == line]


def test_function_locals_are_named_fn_colon_name(runs: dict[str, Any]) -> None:
    # fn_nonleaf_weight.py: line 8 is `w = torch.randn(n, requires_grad=True) * 0.1` in
    # make_weight, called on line 16 and again on line 21 (when w, x, loss are bound).
    _, tc = _both(runs, "fn_nonleaf_weight.py")
    steps = _steps_at(tc, 8)
    assert len(steps) == 2
    first, second = (s["tensors"] for s in steps)
    assert "make_weight:w" in first and "w" not in first
    assert {"make_weight:w", "w", "x", "loss"} <= set(second)
    local = second["make_weight:w"]
    assert (local["is_leaf"], local["requires_grad"], local["grad_fn"]) == (False, True, "MulBackward0")
    assert not any(_is_local(n) for s in _steps_at(tc, 16) for n in s["tensors"])


def test_method_locals_are_shown_with_the_module_parameters(runs: dict[str, Any]) -> None:
    # inplace_relu_module.py: line 16 is `h = torch.sigmoid(self.lin(x))` in Block.forward,
    # run from `out = block(torch.randn(2, 3))` on line 21.
    _, tc = _both(runs, "inplace_relu_module.py")
    steps = _steps_at(tc, 16)
    assert len(steps) == 1
    names = set(steps[0]["tensors"])
    assert any(_is_local(n) and n.endswith(":h") for n in names), sorted(names)
    assert {"block.lin.weight", "block.lin.bias"} <= names
    assert "out" not in names


def test_lambda_hook_output_is_in_the_backward_step(runs: dict[str, Any]) -> None:
    # hook_lambda_print.py: line 9 is `z.backward()`.
    _, tc = _both(runs, "hook_lambda_print.py")
    (backward,) = _steps_at(tc, 9)
    assert backward["stdout"] == "grad of y: tensor([1., 1., 1.])\n"
    assert backward["status"] == "ok"


def test_a_caught_error_is_an_ok_step(runs: dict[str, Any]) -> None:
    # try_backward_twice.py: line 8 is the second `y.backward()`, inside try.
    _, tc = _both(runs, "try_backward_twice.py")
    (failed,) = _steps_at(tc, 8)
    assert failed["status"] == "ok" and failed["error"] is None
    assert [s["stdout"] for s in _steps_at(tc, 10)] == ["caught: True\n"]
    assert _steps_at(tc, 12) == [], "the else branch does not run"
    assert [s["stdout"] for s in _steps_at(tc, 14)] == ["finally runs\n"]


def test_an_error_raised_in_a_function_is_the_raise_step(runs: dict[str, Any]) -> None:
    # raise_in_validator.py: line 8 is the `raise ValueError(...)` in check_finite, run
    # once under try (caught, line 14) and once from line 18 (the error).
    _, tc = _both(runs, "raise_in_validator.py")
    raises = _steps_at(tc, 8)
    assert [s["status"] for s in raises] == ["ok", "error"]
    assert raises[-1]["error"]["type"] == "ValueError"
    assert raises[-1]["error"]["message"] == "loss has non-finite values"
