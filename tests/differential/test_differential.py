"""Differential tests: tcopy against plain Python on the scripts in tests/corpus/basics/.

Every corpus script runs twice: under tcopy (in process through ``run_source``, and for
the scripts in ``CLI_SCRIPTS`` as a real ``python -m tcopy_cli run FILE --format json``
subprocess) and under plain Python, statement by statement, in a separate process
(tests/differential/reference.py). What tcopy reports after the last step must be what plain
Python ends with: every tensor's values, gradient, requires_grad, is_leaf, grad_fn
name, version counter, shape, dtype and storage offset; which names share storage and
which have equal data_ptr; NumPy arrays and the memory they share; the printed text;
the warnings; the error type and line; and the number of statements executed.

A script whose comment lines include ``# expect-error: TYPE`` must end with that error
under plain Python; every other script must run to the end without one.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from reference import collect_reference, start_reference

CORPUS_DIR = Path(__file__).resolve().parent.parent / "corpus" / "basics"
CORPUS = sorted(CORPUS_DIR.glob("*.py"))
# Every shipped example is part of the corpus too: its final state must match plain python.
EXAMPLES_DIR = Path(__file__).resolve().parents[2] / "tcopy_cli" / "examples"
EXAMPLES = sorted(p for p in EXAMPLES_DIR.glob("*.py") if not p.name.startswith("_"))
PATHS = {p.name: p for p in CORPUS} | {f"example_{p.name}": p for p in EXAMPLES}
NAMES = sorted(PATHS)
# Run through the real command line (a subprocess) rather than in process.
CLI_SCRIPTS = frozenset({"numpy_roundtrip.py", "deepcopy_nonleaf_error.py", "sgd_loop.py", "example_clone.py"})
EXPECT_ERROR = re.compile(r"^#\s*expect-error:\s*(\w+)\s*$", re.MULTILINE)
ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
CLI_TIMEOUT = 120.0


def _source(name: str) -> str:
    return PATHS[name].read_text(encoding="utf-8")


def _addresses_normalised(text: str) -> str:
    return ADDRESS.sub("0x<addr>", text)


# --- tcopy's side: a run as the spec's JSON events ------------------------------------


def _tcopy_in_process(name: str) -> dict[str, Any]:
    from tcopy_cli.trace import run_source

    try:
        trace = run_source(_source(name), origin=name)
    except Exception as exc:  # a crash of tcopy itself fails this script's tests only
        return {"crash": f"run_source raised {type(exc).__name__}: {exc}"}
    assert trace.summary is not None
    steps = [json.loads(json.dumps(step.to_json(), allow_nan=False)) for step in trace.steps]
    return {"crash": None, "steps": steps, "end": trace.summary.to_json(), "exit_code": None}


def _start_cli(name: str) -> subprocess.Popen[str]:
    env = {**os.environ, "NO_COLOR": "1", "PYTHONIOENCODING": "utf-8"}
    return subprocess.Popen(
        [sys.executable, "-m", "tcopy_cli", "run", str(PATHS[name]), "--format", "json"],
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
    if kinds[:1] != ["start"] or kinds[-1:] != ["end"] or set(kinds[1:-1]) - {"step"}:
        return {"crash": f"events {kinds} are not start, step..., end; exit {proc.returncode}; stderr:\n{err}"}
    steps = [e for e in events if e["event"] == "step"]
    return {"crash": None, "steps": steps, "end": events[-1], "exit_code": proc.returncode, "stderr": err}


@pytest.fixture(scope="session")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Both sides for every corpus script: name -> {"ref": ..., "tcopy": ...}.

    The reference process and the CLI subprocesses start first and run while the
    in-process tcopy runs go on here (each process pays ~2.5 s for ``import torch``).
    """
    reference = start_reference({n: _source(n) for n in NAMES}, tmp_path_factory.mktemp("reference"))
    cli = {n: _start_cli(n) for n in sorted(CLI_SCRIPTS)}
    tcopy = {n: _tcopy_in_process(n) for n in NAMES if n not in CLI_SCRIPTS}
    tcopy.update({n: _collect_cli(p) for n, p in cli.items()})
    ref = collect_reference(reference)
    return {n: {"ref": ref[n], "tcopy": tcopy[n]} for n in NAMES}


def _both(runs: dict[str, Any], name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(reference result, tcopy result); fails the test if tcopy crashed on the script."""
    tc = runs[name]["tcopy"]
    if tc["crash"] is not None:
        pytest.fail(f"tcopy did not complete the run: {tc['crash']}", pytrace=False)
    return runs[name]["ref"], tc


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
    """The final state (differential.final_state's shape) from tcopy's last step event."""
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


def _last(run: dict[str, Any]) -> dict[str, Any]:
    assert run["steps"], "tcopy ran no steps"
    return run["steps"][-1]  # type: ignore[no-any-return]


# --- the tests -------------------------------------------------------------------------


def test_corpus_is_large_enough() -> None:
    assert len(CORPUS) >= 28


@pytest.mark.parametrize("name", NAMES)
def test_script_has_title_and_reference_runs_as_intended(name: str, runs: dict[str, Any]) -> None:
    source = _source(name)
    assert source.startswith("# ") and len(source.splitlines()[0]) > 3, "first line must be a '# title' comment"
    ref = runs[name]["ref"]
    expected = EXPECT_ERROR.search(source)
    if expected is None:
        assert ref["error"] is None, f"plain Python failed: {ref['error']}"
        assert ref["completed"] == ref["statements_total"]
    else:
        assert ref["error"] is not None and ref["error"]["type"] == expected.group(1), ref["error"]


@pytest.mark.parametrize("name", NAMES)
def test_step_count(name: str, runs: dict[str, Any]) -> None:
    """tcopy executes the script in full: one step per statement plain Python ran, in the same order."""
    ref, tc = _both(runs, name)
    assert len(tc["steps"]) == ref["steps"]
    assert [s["line"] for s in tc["steps"]] == ref["step_lines"]
    assert tc["end"]["steps"] == ref["steps"]
    assert [s["index"] for s in tc["steps"]] == list(range(1, len(tc["steps"]) + 1))


@pytest.mark.parametrize("name", NAMES)
def test_error(name: str, runs: dict[str, Any]) -> None:
    """Same error type and line (tcopy: the last step with status "error"), or none on both sides."""
    ref, tc = _both(runs, name)
    errors = [s for s in tc["steps"] if s["status"] == "error"]
    got = {"type": errors[-1]["error"]["type"], "line": errors[-1]["line"]} if errors else None
    want = {"type": ref["error"]["type"], "line": ref["error"]["line"]} if ref["error"] else None
    assert got == want
    assert tc["end"]["status"] == ("error" if want else "ok")
    assert tc["end"]["errors"] == len(errors)
    if errors:
        assert tc["steps"][-1]["status"] == "error", "without --keep-going the failing step is the last"
    if tc["exit_code"] is not None:
        assert tc["exit_code"] == (1 if want else 0), tc.get("stderr")


@pytest.mark.parametrize("name", NAMES)
def test_printed_text(name: str, runs: dict[str, Any]) -> None:
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
    ref, tc = _both(runs, name)
    ref_state, state = ref["state"], tcopy_state(_last(tc))
    assert sorted(state["tensors"]) == sorted(ref_state["tensors"])
    assert sorted(state["arrays"]) == sorted(ref_state["arrays"])


@pytest.mark.parametrize("name", NAMES)
def test_tensor_facts(name: str, runs: dict[str, Any]) -> None:
    """Values, grads, requires_grad, is_leaf, grad_fn, version, shape, dtype, offset: exactly equal."""
    ref, tc = _both(runs, name)
    ref_state, state = ref["state"], tcopy_state(_last(tc))
    differ = {
        n: {"tcopy": state["tensors"].get(n), "python": ref_state["tensors"][n]}
        for n in ref_state["tensors"]
        if state["tensors"].get(n) != ref_state["tensors"][n]
    }
    assert not differ
    assert state["arrays"] == ref_state["arrays"]


@pytest.mark.parametrize("name", NAMES)
def test_memory_sharing(name: str, runs: dict[str, Any]) -> None:
    """Same storage-sharing pairs, equal-data_ptr pairs and array overlaps (gradients as name.grad)."""
    ref, tc = _both(runs, name)
    ref_state, state = ref["state"], tcopy_state(_last(tc))
    assert state["storage_pairs"] == ref_state["storage_pairs"], "pairs with the same storage label"
    assert state["shares_memory_pairs"] == ref_state["storage_pairs"], "pairs listed in shares_memory_with"
    assert state["data_ptr_pairs"] == ref_state["data_ptr_pairs"]
    assert state["array_pairs"] == ref_state["array_pairs"]
