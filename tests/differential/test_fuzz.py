"""Property-based tests (hypothesis) of tcopy as a whole.

1. Robustness of the command line: random bytes on stdin, random text, Python-like
   token soup and damaged valid scripts given to ``tcopy run`` in every format. Exit
   status is 0, 1 or 2; no Python traceback and no "bug in tcopy" message anywhere; a
   message on stderr for every non-zero exit; in JSON mode every stdout line is strict
   JSON, framed by ``start`` and ``end``; and small limits keep every run short.
2. Differential: generated scripts over the language tcopy supports
   (tests/fuzz_strategies.py) run under tcopy (``run_source``) and under plain Python
   (``exec`` of one top-level statement at a time, in this process: that is the
   reference, not tcopy). The final state must agree: every tensor's values, shape,
   dtype, gradient, requires_grad, is_leaf, grad_fn class, version counter and storage
   offset, which names share storage and data_ptr, the printed text, and the first
   error's type and line.

Profiles: the default run is deterministic (derandomize) and bounded (about 35 s on
two cores); ``pytest tests/differential/test_fuzz.py --hypothesis-profile=long`` runs 3000
examples per test with fresh randomness (profiles in tests/fuzz_strategies.py,
registered through tests/conftest.py).
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import io
import json
import math
import re
import warnings
from collections.abc import Callable
from typing import Any

import pytest
import torch
from cli_runs import invoke
from fuzz_strategies import fuzz_settings, mutated_scripts, python_like_text, valid_scripts
from hypothesis import event, example, given
from hypothesis import strategies as st

from tcopy_cli.engine import run_source
from tcopy_cli.render.jsonl import step_json

pytestmark = pytest.mark.slow

FORMATS = st.sampled_from(["json", "table", "markdown"])
# Small limits: a fuzzed script can't allocate much, loop long or print much.
CLI_LIMITS = [
    "--timeout",
    "5",
    "--max-steps",
    "200",
    "--max-elements",
    "100000",
    "--max-bytes",
    "50000000",
    "--max-iterations",
    "1000",
    "--max-str-len",
    "10000",
    "--max-output",
    "20000",
    "--max-int-bits",
    "4096",
]
TRACEBACK = "Traceback (most recent call last)"
ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
SCRIPT_FILENAME = "<fuzz-script>"


# Scripts on which the properties found tcopy wrong, checked on every run (test_found_cases_*).
# A view made under no_grad, then an in-place change of its base with grad enabled: plain Python runs
# it; reading the view's is_leaf/grad_fn raises in torch, and tcopy's observer let that escape as an
# "internal error" (fixed in 56408d8).
NO_GRAD_VIEW_THEN_INPLACE = (
    "import torch\n"
    "a = torch.ones(3, requires_grad=True).clone()\n"
    "with torch.no_grad():\n"
    "    c = a.view(-1)\n"
    "a.mul_(2.0)\n"
    "print(a)\n"
)
# tcopy reads every view's grad_fn after each step; after an in-place bump of the base and
# a.requires_grad_(), that read makes torch attach AsStridedBackward0 to b for good, so observing
# changes what the script computes (plain Python prints "False True None").
OBSERVED_VIEW_GETS_GRAD_FN = (
    "import torch\n"
    "a = torch.tensor([1.0, 1.0, 1.0])\n"
    "b = a.view(-1)\n"
    "a.add_(1.0)\n"
    "a.requires_grad_()\n"
    "a.requires_grad_(False)\n"
    "print(b.requires_grad, b.is_leaf, b.grad_fn)\n"
)
FOUND = {
    "no_grad_view_then_inplace": NO_GRAD_VIEW_THEN_INPLACE,
    "observed_view_gets_grad_fn": pytest.param(
        OBSERVED_VIEW_GETS_GRAD_FN,
        marks=pytest.mark.xfail(
            strict=True,
            reason="known limitation: reading a view's grad_fn after its base changed in place makes torch "
            "attach AsStridedBackward0 when the base requires grad at that moment; if the script later turns "
            "requires_grad off again, plain python (which never read it) differs",
        ),
    ),
}


# --- 1. the command line never crashes ----------------------------------------------------


def _check_cli(args: list[str], fmt: str, input: bytes | None = None) -> None:
    result = invoke("run", *args, "-f", fmt, *CLI_LIMITS, input=input)
    exc = result.exception
    shown = f"exit {result.exit_code}\n--- stdout\n{result.stdout[-3000:]}\n--- stderr\n{result.stderr[-3000:]}"
    assert exc is None or isinstance(exc, SystemExit), f"uncaught {type(exc).__name__}: {exc}\n{shown}"
    assert result.exit_code in (0, 1, 2), shown
    assert TRACEBACK not in result.stdout and TRACEBACK not in result.stderr, shown
    assert "bug in tcopy" not in result.stderr, shown
    if result.exit_code != 0:
        assert result.stderr.strip(), f"no message on stderr for a non-zero exit\n{shown}"
    if result.exit_code == 1:
        assert "tcopy:" in result.stderr, shown
    if fmt == "json" and result.exit_code in (0, 1):
        try:
            events = [json.loads(line) for line in result.stdout.splitlines()]
        except json.JSONDecodeError as err:
            raise AssertionError(f"stdout is not JSON Lines: {err}\n{shown}") from None
        kinds = [e.get("event") for e in events]
        assert kinds[:1] == ["start"] and kinds[-1:] == ["end"], f"events {kinds}\n{shown}"
        assert set(kinds[1:-1]) <= {"step", "loop", "rejected"}, f"events {kinds}\n{shown}"
        assert events[-1]["status"] == ("ok" if result.exit_code == 0 else "error"), shown


@fuzz_settings(120)
@given(data=st.binary(max_size=300), fmt=FORMATS)
@example(data=b"\xff\xfe\x00import torch", fmt="json")
@example(data=b"import torch\nx = torch.ones(2)\x00\n", fmt="table")
def test_cli_survives_random_bytes_on_stdin(data: bytes, fmt: str) -> None:
    _check_cli(["-"], fmt, input=data)


@fuzz_settings(200)
@given(text=st.text(max_size=300), fmt=FORMATS, keep_going=st.booleans())
def test_cli_survives_random_text(text: str, fmt: str, keep_going: bool) -> None:
    _check_cli(["-e", text, *(["-k"] if keep_going else [])], fmt)


@fuzz_settings(200)
@given(text=python_like_text(), fmt=FORMATS, keep_going=st.booleans())
@example(text="().__class__.__mro__[1].__subclasses__()", fmt="json", keep_going=False)
@example(text="x = torch.ones(2)\nfor i in range(10**9):\n    x += 1\n", fmt="table", keep_going=False)
@example(text="a = 'a' * 10**9", fmt="json", keep_going=True)
def test_cli_survives_python_like_text(text: str, fmt: str, keep_going: bool) -> None:
    _check_cli(["-e", text, *(["-k"] if keep_going else [])], fmt)


@fuzz_settings(150)
@given(text=st.one_of(mutated_scripts(), valid_scripts()), fmt=FORMATS, keep_going=st.booleans())
def test_cli_survives_valid_and_damaged_scripts(text: str, fmt: str, keep_going: bool) -> None:
    _check_cli(["-e", text, *(["-k"] if keep_going else [])], fmt)


# --- 2. tcopy agrees with plain Python ------------------------------------------------------


def _json_values(v: Any) -> Any:
    if isinstance(v, list):
        return [_json_values(x) for x in v]
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


def _statement_line(body: list[ast.stmt], line: int) -> int | None:
    """Line of the innermost statement containing ``line`` (a block's header line if in its header)."""
    for stmt in body:
        if not stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno):
            continue
        if isinstance(stmt, (ast.If, ast.With, ast.For)):
            if line < stmt.body[0].lineno:
                return stmt.lineno
            inner = _statement_line([*stmt.body, *getattr(stmt, "orelse", [])], line)
            return inner if inner is not None else stmt.lineno
        return stmt.lineno
    return None


def _error_line(exc: BaseException, tree: ast.Module) -> int | None:
    line = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == SCRIPT_FILENAME:
            line = tb.tb_lineno
        tb = tb.tb_next
    return _statement_line(tree.body, line) if line is not None else None


def run_plain(source: str) -> dict[str, Any]:
    """The reference: plain Python runs ``source`` one top-level statement at a time."""
    tree = ast.parse(source, filename=SCRIPT_FILENAME)
    ns: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins}
    out = io.StringIO()
    error = None
    grad_mode = torch.is_grad_enabled()
    try:
        for stmt in tree.body:
            code = compile(ast.Module(body=[stmt], type_ignores=[]), SCRIPT_FILENAME, "exec")
            with contextlib.redirect_stdout(out), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    exec(code, ns)
                except Exception as exc:
                    error = {"type": type(exc).__name__, "line": _error_line(exc, tree)}
            if error is not None:
                break
    finally:
        torch.set_grad_enabled(grad_mode)
    members: list[tuple[str, torch.Tensor]] = []
    tensors: dict[str, Any] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, t in ns.items():
            if not isinstance(t, torch.Tensor):
                continue
            grad = _read(lambda t=t: t.grad if (t.is_leaf or t.retains_grad) else None)
            tensors[name] = {
                **_facts(t),
                "requires_grad": _read(lambda t=t: t.requires_grad),
                "is_leaf": _read(lambda t=t: t.is_leaf),
                "grad_fn": _read(lambda t=t: type(t.grad_fn).__name__ if t.grad_fn is not None else None),
                "version": _read(lambda t=t: t._version),
                "storage_offset": t.storage_offset(),
                "grad": _facts(grad) if isinstance(grad, torch.Tensor) else grad,
            }
            members.append((name, t))
            if isinstance(grad, torch.Tensor):
                members.append((f"{name}.grad", grad))
    by_storage: dict[Any, list[str]] = {}
    by_ptr: dict[Any, list[str]] = {}
    for name, t in members:
        if t.untyped_storage().nbytes() == 0:  # no memory: addresses say nothing
            continue
        by_storage.setdefault(t.untyped_storage().data_ptr(), []).append(name)
        by_ptr.setdefault(t.data_ptr(), []).append(name)
    return {
        "error": error,
        "stdout": ADDRESS.sub("0x?", out.getvalue()),
        "tensors": tensors,
        "storage_pairs": _pairs(by_storage),
        "data_ptr_pairs": _pairs(by_ptr),
    }


class Unreadable(str):
    """A fact plain torch raises on when asked (e.g. ``grad_fn`` of a view created under
    no_grad whose base was later changed in place): not compared, only tcopy must not crash."""


def _read(fact: Callable[[], Any]) -> Any:
    try:
        return fact()
    except RuntimeError as exc:
        return Unreadable(f"<torch raises: {str(exc)[:60]}>")


def _facts(t: torch.Tensor) -> dict[str, Any]:
    return {
        "shape": list(t.shape),
        "dtype": str(t.dtype).removeprefix("torch."),
        "values": _json_values(t.detach().tolist()),
    }


def _pairs(groups: dict[Any, list[str]]) -> list[tuple[str, str]]:
    return sorted({(a, b) if a < b else (b, a) for names in groups.values() for a in names for b in names if a != b})


def run_tcopy(source: str) -> dict[str, Any]:
    """The same facts from tcopy's run: the last step's tensors, all printed text, the error step."""
    try:
        trace = run_source(source, keep_going=False)
    except Exception as exc:  # the script's own errors become error steps; anything else is tcopy's
        raise AssertionError(f"run_source crashed: {type(exc).__name__}: {exc}") from exc
    steps = [step_json(s) for s in trace.steps]
    assert steps, "tcopy ran no steps"
    errors = [s for s in steps if s["status"] == "error"]
    assert len(errors) <= 1 and (not errors or errors[0] is steps[-1]), "without --keep-going an error ends the run"
    last = steps[-1]
    tensors: dict[str, Any] = {}
    members: list[tuple[str, dict[str, Any]]] = []
    for name, rec in last["tensors"].items():
        tensors[name] = {
            "shape": rec["shape"],
            "dtype": rec["dtype"],
            "values": rec["values"],
            "requires_grad": rec["requires_grad"],
            "is_leaf": rec["is_leaf"],
            "grad_fn": rec["grad_fn"],
            "version": rec["version"],
            "storage_offset": rec["storage_offset"],
            "grad": ({k: rec["grad"][k] for k in ("shape", "dtype", "values")} if rec["grad"] is not None else None),
        }
        members.append((name, rec))
        if rec["grad"] is not None:
            members.append((f"{name}.grad", rec["grad"]))
    by_label: dict[Any, list[str]] = {}
    by_ptr: dict[Any, list[str]] = {}
    for name, rec in members:
        if rec["storage_nbytes"] == 0:
            continue
        by_label.setdefault(rec["storage"], []).append(name)
        by_ptr.setdefault(rec["data_ptr"], []).append(name)
    error = {"type": errors[0]["error"]["type"], "line": errors[0]["line"]} if errors else None
    return {
        "error": error,
        "stdout": ADDRESS.sub("0x?", "".join(s["stdout"] for s in steps)),
        "tensors": tensors,
        "storage_pairs": _pairs(by_label),
        "data_ptr_pairs": _pairs(by_ptr),
    }


def _diff(want: dict[str, Any], got: dict[str, Any]) -> str:
    lines = []
    for key in ("error", "stdout", "storage_pairs", "data_ptr_pairs"):
        if want[key] != got[key]:
            lines.append(f"{key}: python {want[key]!r} | tcopy {got[key]!r}")
    for name in sorted(set(want["tensors"]) | set(got["tensors"])):
        a, b = want["tensors"].get(name), got["tensors"].get(name)
        if a is None or b is None:
            lines.append(f"tensor {name}: python {a!r} | tcopy {b!r}")
            continue
        for field in sorted(set(a) | set(b)):
            if isinstance(a.get(field), Unreadable):
                continue
            if a.get(field) != b.get(field):
                lines.append(f"{name}.{field}: python {a.get(field)!r} | tcopy {b.get(field)!r}")
    return "\n".join(lines)


@fuzz_settings(300)
@given(source=valid_scripts())
@example(
    source=(
        "import torch\nimport copy\na = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)\nb = a.clone()\n"
        "c = a.detach()\nd = a.data\ne = copy.deepcopy(a)\nf = torch.empty_like(a).copy_(a)\nv = b[1:]\n"
        "v.mul_(2.0)\n(b * f).sum().backward(retain_graph=True)\nwith torch.no_grad():\n    c.add_(1.0)\n"
        "print(a.grad, b.grad_fn)\n(b * f).sum().backward()\n"
    )
)
def test_tcopy_agrees_with_plain_python(source: str) -> None:
    want = _check_agreement(source)
    error = want["error"]
    event(f"plain Python: {error['type'] if error else 'ran to the end'}")
    event(f"tensors at the end: {min(len(want['tensors']), 5)}{'+' if len(want['tensors']) >= 5 else ''}")


def _check_agreement(source: str) -> dict[str, Any]:
    got = run_tcopy(source)
    want = run_plain(source)
    differences = _diff(want, got)
    assert not differences, f"tcopy differs from plain Python:\n{differences}\n--- script\n{source}"
    return want


# --- cases the properties found, checked on every run -----------------------------------------


@pytest.mark.parametrize("source", list(FOUND.values()), ids=list(FOUND.keys()))
def test_found_cases_agree_with_plain_python(source: str) -> None:
    _check_agreement(source)


@pytest.mark.parametrize("source", [NO_GRAD_VIEW_THEN_INPLACE, OBSERVED_VIEW_GETS_GRAD_FN])
@pytest.mark.parametrize("fmt", ["json", "table"])
def test_found_cases_on_the_command_line(source: str, fmt: str) -> None:
    _check_cli(["-e", source], fmt)
