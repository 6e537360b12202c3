"""Differential tests: tcopy against plain Python on every corpus under tests/corpus/.

Each directory under tests/corpus/ is one corpus (``CORPORA`` says how its reference
runs; a directory missing there fails ``test_every_corpus_directory_is_known``):

- ``basics``: small scripts of plain statements, and every shipped example (as
  ``example_NAME.py``). The reference (tests/differential/reference.py, mode
  ``"statements"``) runs one top-level statement at a time and counts steps, so tcopy
  must execute the script in full: one step per statement plain Python ran, same lines,
  same order. The scripts in ``CLI_SCRIPTS`` run through the real command line
  (``python -m tcopy_cli run FILE --format json``, exit status checked) instead of in
  process.
- ``snippets``: snippets as people post them, using the language added for user code:
  module-level ``def`` (defaults, keywords, recursion), ``lambda`` and script functions
  as autograd hooks, ``nn.Module`` subclasses, ``try``/``except``/``else``/``finally``,
  ``assert``, ``raise``, ``while``, comprehensions, ``map``/``zip``/``enumerate``/
  ``sorted``/``reversed``/``all``/``any``, ``import torch.nn as nn`` and friends,
  optimizers, ``state_dict``, ``copy.deepcopy`` of a model, ``torch.autograd.grad``,
  ``Variable`` and NumPy arrays. tcopy makes a step of every statement inside a called
  function, which the reference (mode ``"snippets"``) does not mirror, so step counts are
  not compared; instead every simple statement plain Python ran inside a script function
  must be a step. The error line is the line of the innermost statement that failed, in
  a function body if that is where it was raised. Snippets are short (at most 30 lines)
  and seeded before any random initialisation.

For every script of every corpus, what tcopy reports must be what plain Python ends
with: the printed text (addresses normalised), the warnings, the error type and line,
and the final state: every tensor bound to a global name (and every parameter and
buffer of an ``nn.Module`` bound to a global name, ``model.fc.weight``) with values,
gradient, requires_grad, is_leaf, grad_fn name, version counter, shape, dtype and
storage offset; which names share storage and which have equal data_ptr; NumPy arrays
and the memory they share. Function locals (``fn:name``) show only while the function
runs; the step index counts every step.

A script whose comment lines include ``# expect-error: TYPE``, or whose last failing
line ends in tcopy's ``# expect: TYPE`` comment, must end with that error under plain
Python; every other script must run to the end without one. tcopy reports an error on
a line marked ``# expect: TYPE`` as expected: the run ends "ok" and exits 0.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import pytest
from reference import collect_reference, fresh_warn_once, start_reference

CORPUS_ROOT = Path(__file__).resolve().parent.parent / "corpus"
EXAMPLES_DIR = Path(__file__).resolve().parents[2] / "tcopy_cli" / "examples"
EXPECT_ERROR = re.compile(r"^#\s*expect-error:\s*(\w+)\s*$|\S.*#\s*expect:\s*(\w+)\s*$", re.MULTILINE)
EXPECT_ON_LINE = re.compile(r"\S.*#\s*expect:\s*(\w+)\s*$")
ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
# A function's local while it runs: "fn:name", "Cls.fn:name[0]", "fn:name.grad".
LOCAL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*:")
RANDOM_INIT = re.compile(r"torch\.randn?\(|nn\.(Linear|Conv[12]d|Embedding|LayerNorm|BatchNorm1d|Dropout)\(")
SNIPPET_MAX_LINES = 30
CLI_TIMEOUT = 120.0


@dataclass(frozen=True)
class Corpus:
    name: str
    mode: str  # the reference's mode: "statements" (steps mirrored) or "snippets"
    min_scripts: int
    with_examples: bool = False  # every shipped example joins as example_NAME.py
    cli_scripts: frozenset[str] = frozenset()  # run through the real command line
    short_and_seeded: bool = False

    @cached_property
    def paths(self) -> dict[str, Path]:
        paths = {p.name: p for p in sorted((CORPUS_ROOT / self.name).glob("*.py"))}
        if self.with_examples:
            examples = sorted(p for p in EXAMPLES_DIR.glob("*.py") if not p.name.startswith("_"))
            paths |= {f"example_{p.name}": p for p in examples}
        return paths

    def source(self, name: str) -> str:
        return self.paths[name].read_text(encoding="utf-8")


CORPORA = {
    c.name: c
    for c in (
        Corpus(
            "basics",
            mode="statements",
            min_scripts=28,
            with_examples=True,
            cli_scripts=frozenset(
                {
                    "numpy_roundtrip.py",
                    "deepcopy_nonleaf_error.py",
                    "sgd_loop.py",
                    "example_clone.py",
                    "example_deepcopy.py",
                }
            ),
        ),
        Corpus("snippets", mode="snippets", min_scripts=22, short_and_seeded=True),
    )
}


def _cases(select: Any = lambda c: True) -> list[Any]:
    return [
        pytest.param(c.name, name, id=f"{c.name}/{name}")
        for c in CORPORA.values()
        if select(c)
        for name in sorted(c.paths)
    ]


ALL = _cases()
STATEMENTS = _cases(lambda c: c.mode == "statements")
SNIPPETS = _cases(lambda c: c.mode == "snippets")
SHORT_AND_SEEDED = _cases(lambda c: c.short_and_seeded)


def _addresses_normalised(text: str) -> str:
    return ADDRESS.sub("0x<addr>", text)


# --- tcopy's side: a run as the spec's JSON events ------------------------------------


def _tcopy_in_process(source: str, name: str) -> dict[str, Any]:
    from tcopy_cli.engine import run_source
    from tcopy_cli.errors import ScriptRejected
    from tcopy_cli.render.jsonl import end_json, step_json

    fresh_warn_once()
    try:
        trace = run_source(source, origin=name)
    except ScriptRejected as exc:
        return {"crash": f"tcopy refused the script at {exc.line}:{exc.column}: {exc.message}"}
    except Exception as exc:  # a crash of tcopy itself fails this script's tests only
        return {"crash": f"run_source raised {type(exc).__name__}: {exc}"}
    assert trace.summary is not None
    steps = [json.loads(json.dumps(step_json(step), allow_nan=False)) for step in trace.steps]
    return {"crash": None, "steps": steps, "end": end_json(trace.summary), "exit_code": None}


def _start_cli(path: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "NO_COLOR": "1", "PYTHONIOENCODING": "utf-8"}
    return subprocess.Popen(
        [sys.executable, "-m", "tcopy_cli", "run", str(path), "--format", "json"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _collect_cli(proc: subprocess.Popen[str]) -> dict[str, Any]:
    try:
        out, err = proc.communicate(timeout=CLI_TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    try:
        events = [json.loads(line) for line in out.splitlines()]  # every stdout line is strict JSON
    except json.JSONDecodeError as exc:
        return {"crash": f"stdout is not JSON Lines ({exc}); stderr:\n{err}"}
    kinds = [e.get("event") for e in events]
    if kinds[:1] != ["start"] or kinds[-1:] != ["end"] or set(kinds[1:-1]) - {"step", "loop"}:
        return {"crash": f"events {kinds} are not start, step/loop..., end; exit {proc.returncode}; stderr:\n{err}"}
    steps = [e for e in events if e["event"] == "step"]
    return {"crash": None, "steps": steps, "end": events[-1], "exit_code": proc.returncode, "stderr": err}


def _run_corpus(corpus: Corpus, workdir: Path) -> dict[str, dict[str, Any]]:
    """Both sides for every script of one corpus: name -> {"ref": ..., "tcopy": ...}.

    The reference process and the CLI subprocesses start first and run while the
    in-process tcopy runs go on here (each process pays ~2.5 s for ``import torch``).
    """
    paths = corpus.paths
    sources = {n: p.read_text(encoding="utf-8") for n, p in paths.items()}
    reference = start_reference(sources, workdir, mode=corpus.mode)
    try:
        cli = {n: _start_cli(paths[n]) for n in sorted(corpus.cli_scripts)}
        tcopy = {n: _tcopy_in_process(s, n) for n, s in sources.items() if n not in corpus.cli_scripts}
        tcopy.update({n: _collect_cli(p) for n, p in cli.items()})
    finally:
        ref = collect_reference(reference)
    return {n: {"ref": ref[n], "tcopy": tcopy[n]} for n in sources}


@pytest.fixture(scope="session")
def corpus_runs(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """corpus_runs(corpus) -> that corpus's runs, each corpus run once per session (on first use)."""
    cache: dict[str, dict[str, dict[str, Any]]] = {}

    def get(corpus: str) -> dict[str, dict[str, Any]]:
        if corpus not in cache:
            cache[corpus] = _run_corpus(CORPORA[corpus], tmp_path_factory.mktemp(f"reference-{corpus}"))
        return cache[corpus]

    return get


def _both(corpus_runs: Any, corpus: str, name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(reference result, tcopy result); fails the test if tcopy refused or crashed on the script."""
    run = corpus_runs(corpus)[name]
    tc = run["tcopy"]
    if tc["crash"] is not None:
        pytest.fail(f"tcopy did not complete the run: {tc['crash']}", pytrace=False)
    if not tc["steps"]:
        pytest.fail("tcopy ran no steps", pytrace=False)
    return run["ref"], tc


# --- tcopy's final state, in the reference's terms -------------------------------------


def _facts(rec: dict[str, Any]) -> dict[str, Any]:
    return {"shape": rec["shape"], "dtype": rec["dtype"], "values": rec["values"]}


def _pairs(groups: dict[Any, list[str]]) -> list[list[str]]:
    pairs = set()
    for names in groups.values():
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                pairs.add(tuple(sorted((a, b))))
    return sorted(list(p) for p in pairs)


def _listed_pairs(listed: dict[str, list[str]]) -> set[tuple[str, ...]]:
    return {tuple(sorted((name, other))) for name, others in listed.items() for other in others}


def tcopy_state(step: dict[str, Any]) -> dict[str, Any]:
    """The final state (reference.final_state's shape) from tcopy's step event."""
    tensors: dict[str, Any] = {}
    members: list[tuple[str, dict[str, Any]]] = []
    for name, rec in step["tensors"].items():
        facts = _facts(rec)
        facts.update(
            requires_grad=rec["requires_grad"],
            is_leaf=rec["is_leaf"],
            grad_fn=rec["grad_fn"],
            version=rec["version"],
            storage_offset=rec["storage_offset"],
            grad=_facts(rec["grad"]) if rec["grad"] is not None else None,
        )
        tensors[name] = facts
        members.append((name, rec))
        if rec["grad"] is not None:
            members.append((f"{name}.grad", rec["grad"]))
    by_label: dict[str, list[str]] = {}
    by_ptr: dict[int, list[str]] = {}
    for name, rec in members:
        by_label.setdefault(rec["storage"], []).append(name)
        by_ptr.setdefault(rec["data_ptr"], []).append(name)
    listed = {name: rec["shares_memory_with"] for name, rec in members}
    array_listed = {name: rec["shares_memory_with"] for name, rec in step["arrays"].items()}
    return {
        "tensors": tensors,
        "arrays": {name: _facts(rec) for name, rec in step["arrays"].items()},
        "storage_pairs": _pairs(by_label),
        "shares_memory_pairs": sorted(list(p) for p in _listed_pairs(listed)),
        "data_ptr_pairs": _pairs(by_ptr),
        "array_pairs": sorted(list(p) for p in _listed_pairs(array_listed)),
    }


def _is_local(name: str) -> bool:
    return LOCAL_NAME.match(name) is not None


def _module_state(step: dict[str, Any]) -> dict[str, Any]:
    """tcopy's state after ``step`` without function locals (plain Python's globals only).

    ``test_function_locals_only_while_it_runs`` checks that the last step has none.
    """
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


# --- the corpora themselves ------------------------------------------------------------


def test_every_corpus_directory_is_known() -> None:
    dirs = sorted(p.name for p in CORPUS_ROOT.iterdir() if p.is_dir() and not p.name.startswith(("_", ".")))
    assert dirs == sorted(CORPORA)


@pytest.mark.parametrize("corpus", sorted(CORPORA))
def test_corpus_is_large_enough(corpus: str) -> None:
    scripts = list((CORPUS_ROOT / corpus).glob("*.py"))
    assert len(scripts) >= CORPORA[corpus].min_scripts


@pytest.mark.parametrize(("corpus", "name"), ALL)
def test_script_has_a_title(corpus: str, name: str) -> None:
    source = CORPORA[corpus].source(name)
    assert source.startswith("# ") and len(source.splitlines()[0]) > 3, "first line must be a '# title' comment"


@pytest.mark.parametrize(("corpus", "name"), SHORT_AND_SEEDED)
def test_snippet_is_short_and_seeded(corpus: str, name: str) -> None:
    lines = CORPORA[corpus].source(name).splitlines()
    assert len(lines) <= SNIPPET_MAX_LINES
    code = "\n".join(line for line in lines if not line.lstrip().startswith("#"))
    first_random = RANDOM_INIT.search(code)
    if first_random is not None:
        seed = code.find("torch.manual_seed(0)")
        assert 0 <= seed < first_random.start(), "torch.manual_seed(0) must come before any random init"


@pytest.mark.parametrize(("corpus", "name"), ALL)
def test_reference_runs_as_intended(corpus: str, name: str, corpus_runs: Any) -> None:
    ref = corpus_runs(corpus)[name]["ref"]
    expected = EXPECT_ERROR.search(CORPORA[corpus].source(name))
    if expected is None:
        assert ref["error"] is None, f"plain Python failed: {ref['error']}"
        assert ref["completed"] == ref["statements_total"]
    else:
        kind = expected.group(1) or expected.group(2)
        assert ref["error"] is not None and ref["error"]["type"] == kind, ref["error"]


# --- tcopy against plain Python ------------------------------------------------------


@pytest.mark.parametrize(("corpus", "name"), STATEMENTS)
def test_step_count(corpus: str, name: str, corpus_runs: Any) -> None:
    """tcopy executes the script in full: one step per statement plain Python ran, in the same order."""
    ref, tc = _both(corpus_runs, corpus, name)
    assert len(tc["steps"]) == ref["steps"]
    assert [s["line"] for s in tc["steps"]] == ref["step_lines"]
    assert tc["end"]["steps"] == ref["steps"]


@pytest.mark.parametrize(("corpus", "name"), ALL)
def test_error(corpus: str, name: str, corpus_runs: Any) -> None:
    """Same error type and line, or none on both sides.

    tcopy's error is its first error step, and without --keep-going the run ends at it.
    A caught error is no error step: its statement is a step with status ok.
    """
    ref, tc = _both(corpus_runs, corpus, name)
    errors = [s for s in tc["steps"] if s["status"] == "error"]
    got = {"type": errors[0]["error"]["type"], "line": errors[0]["line"]} if errors else None
    want = {"type": ref["error"]["type"], "line": ref["error"]["line"]} if ref["error"] else None
    assert got == want
    # An error on a line marked "# expect: TYPE" (that type) is the intended outcome.
    lines = CORPORA[corpus].source(name).splitlines()
    marked = {n: m.group(1) for n, line in enumerate(lines, 1) if (m := EXPECT_ON_LINE.search(line))}
    intended = want is not None and marked.get(want["line"]) == want["type"]
    failed = want is not None and not intended
    if errors:
        assert errors[0]["error"].get("expected", False) == intended == errors[0].get("expected", False)
    assert tc["end"]["status"] == ("error" if failed else "ok")
    assert tc["end"].get("expected_errors", 0) == (1 if intended else 0)
    assert tc["end"]["errors"] == len(errors)
    if errors:
        assert tc["steps"][-1]["status"] == "error", "without --keep-going the run ends at the error"
        if CORPORA[corpus].mode == "statements":
            assert len(errors) == 1, "a top-level statement fails once"
    if tc["exit_code"] is not None:
        assert tc["exit_code"] == (1 if failed else 0), tc.get("stderr")


@pytest.mark.parametrize(("corpus", "name"), ALL)
def test_printed_text(corpus: str, name: str, corpus_runs: Any) -> None:
    """What print() wrote, hooks called by backward included, in order."""
    ref, tc = _both(corpus_runs, corpus, name)
    printed = "".join(s["stdout"] for s in tc["steps"])
    assert _addresses_normalised(printed) == _addresses_normalised(ref["stdout"])


@pytest.mark.parametrize(("corpus", "name"), ALL)
def test_warnings(corpus: str, name: str, corpus_runs: Any) -> None:
    ref, tc = _both(corpus_runs, corpus, name)
    warned = [w for s in tc["steps"] for w in s["warnings"]]
    assert warned == ref["warnings"]


@pytest.mark.parametrize(("corpus", "name"), ALL)
def test_tensor_names(corpus: str, name: str, corpus_runs: Any) -> None:
    """Global tensors, tensors in global containers, module parameters and buffers."""
    ref, tc = _both(corpus_runs, corpus, name)
    state = _module_state(tc["steps"][-1])
    assert sorted(state["tensors"]) == sorted(ref["state"]["tensors"])
    assert sorted(state["arrays"]) == sorted(ref["state"]["arrays"])


@pytest.mark.parametrize(("corpus", "name"), ALL)
def test_tensor_facts(corpus: str, name: str, corpus_runs: Any) -> None:
    """Values, grads, requires_grad, is_leaf, grad_fn, version, shape, dtype, offset: exactly equal."""
    ref, tc = _both(corpus_runs, corpus, name)
    ref_state, state = ref["state"], _module_state(tc["steps"][-1])
    differ = {
        n: {"tcopy": state["tensors"].get(n), "python": ref_state["tensors"][n]}
        for n in ref_state["tensors"]
        if state["tensors"].get(n) != ref_state["tensors"][n]
    }
    assert not differ
    assert state["arrays"] == ref_state["arrays"]


@pytest.mark.parametrize(("corpus", "name"), ALL)
def test_memory_sharing(corpus: str, name: str, corpus_runs: Any) -> None:
    """Same storage-sharing pairs (state_dict entries and parameters included), data_ptr pairs, array overlaps."""
    ref, tc = _both(corpus_runs, corpus, name)
    ref_state, state = ref["state"], _module_state(tc["steps"][-1])
    assert state["storage_pairs"] == ref_state["storage_pairs"], "pairs with the same storage label"
    assert state["shares_memory_pairs"] == ref_state["storage_pairs"], "pairs listed in shares_memory_with"
    assert state["data_ptr_pairs"] == ref_state["data_ptr_pairs"]
    assert state["array_pairs"] == ref_state["array_pairs"]


# --- steps inside functions ----------------------------------------------------------


@pytest.mark.parametrize(("corpus", "name"), SNIPPETS)
def test_statements_run_inside_functions_are_steps(corpus: str, name: str, corpus_runs: Any) -> None:
    """Every simple statement plain Python ran in a def body or method is a step of its own line.

    Hooks that autograd calls are the exception: they run within the backward step.
    """
    ref, tc = _both(corpus_runs, corpus, name)
    step_lines = {s["line"] for s in tc["steps"]}
    assert sorted(set(ref["function_lines"]) - step_lines) == []


@pytest.mark.parametrize(("corpus", "name"), ALL)
def test_function_locals_only_while_it_runs(corpus: str, name: str, corpus_runs: Any) -> None:
    """After a module-level statement no ``fn:name`` is left; the index counts every step."""
    _, tc = _both(corpus_runs, corpus, name)
    inside = _function_ranges(CORPORA[corpus].source(name))
    for step in tc["steps"]:
        if any(first <= step["line"] <= last for first, last in inside):
            continue
        leftover = [n for n in step["tensors"] if _is_local(n)]
        assert leftover == [], f"line {step['line']}: {step['source']!r}"
    assert [s["index"] for s in tc["steps"]] == list(range(1, len(tc["steps"]) + 1))
    assert tc["end"]["steps"] == len(tc["steps"])


# --- snippets with something particular to check ---------------------------------------


def _snippet_steps(corpus_runs: Any, name: str) -> dict[str, Any]:
    return _both(corpus_runs, "snippets", name)[1]


def _steps_at(tc: dict[str, Any], line: int) -> list[dict[str, Any]]:
    return [s for s in tc["steps"] if s["line"] == line]


def test_function_locals_are_named_fn_colon_name(corpus_runs: Any) -> None:
    # fn_nonleaf_weight.py: line 8 is `w = torch.randn(n, requires_grad=True) * 0.1` in
    # make_weight, called on line 16 and again on line 21 (when w, x, loss are bound).
    tc = _snippet_steps(corpus_runs, "fn_nonleaf_weight.py")
    steps = _steps_at(tc, 8)
    assert len(steps) == 2
    first, second = (s["tensors"] for s in steps)
    assert "make_weight:w" in first and "w" not in first
    assert {"make_weight:w", "w", "x", "loss"} <= set(second)
    local = second["make_weight:w"]
    assert (local["is_leaf"], local["requires_grad"], local["grad_fn"]) == (False, True, "MulBackward0")
    assert not any(_is_local(n) for s in _steps_at(tc, 16) for n in s["tensors"])


def test_method_locals_are_shown_with_the_module_parameters(corpus_runs: Any) -> None:
    # inplace_relu_module.py: line 16 is `h = torch.sigmoid(self.lin(x))` in Block.forward,
    # run from `out = block(torch.randn(2, 3))` on line 21.
    tc = _snippet_steps(corpus_runs, "inplace_relu_module.py")
    steps = _steps_at(tc, 16)
    assert len(steps) == 1
    names = set(steps[0]["tensors"])
    assert any(_is_local(n) and n.endswith(":h") for n in names), sorted(names)
    assert {"block.lin.weight", "block.lin.bias"} <= names
    assert "out" not in names


def test_lambda_hook_output_is_in_the_backward_step(corpus_runs: Any) -> None:
    # hook_lambda_print.py: line 9 is `z.backward()`.
    tc = _snippet_steps(corpus_runs, "hook_lambda_print.py")
    (backward,) = _steps_at(tc, 9)
    assert backward["stdout"] == "grad of y: tensor([1., 1., 1.])\n"
    assert backward["status"] == "ok"


def test_a_caught_error_is_an_ok_step(corpus_runs: Any) -> None:
    # try_backward_twice.py: line 8 is the second `y.backward()`, inside try.
    tc = _snippet_steps(corpus_runs, "try_backward_twice.py")
    (failed,) = _steps_at(tc, 8)
    assert failed["status"] == "ok" and failed["error"] is None
    assert [s["stdout"] for s in _steps_at(tc, 10)] == ["caught: True\n"]
    assert _steps_at(tc, 12) == [], "the else branch does not run"
    assert [s["stdout"] for s in _steps_at(tc, 14)] == ["finally runs\n"]


def test_an_error_raised_in_a_function_is_the_raise_step(corpus_runs: Any) -> None:
    # raise_in_validator.py: line 8 is the `raise ValueError(...)` in check_finite, run
    # once under try (caught, line 14) and once from line 18 (the error).
    tc = _snippet_steps(corpus_runs, "raise_in_validator.py")
    raises = _steps_at(tc, 8)
    assert [s["status"] for s in raises] == ["ok", "error"]
    assert raises[-1]["error"]["type"] == "ValueError"
    assert raises[-1]["error"]["message"] == "loss has non-finite values"
