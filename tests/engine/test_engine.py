"""The engine: CPython runs the script under a line tracer, one step per statement, each case
checked against what plain Python computes for the same script.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import torch

from tcopy_cli.limits import Limits
from tcopy_cli.pipeline import run_source
from tcopy_cli.render.jsonl import loop_json, step_json
from tcopy_cli.trace.records import Step

ROOT = Path(__file__).resolve().parents[2]
CORPUS = sorted((ROOT / "tests" / "corpus").glob("*/*.py"))
EXAMPLES = sorted(p for p in (ROOT / "tcopy_cli" / "examples").glob("*.py") if not p.name.startswith("_"))
ADDRESS = re.compile(r"0x[0-9a-fA-F]+")


SHARED_LINES = {
    "semicolons": "import torch\na = torch.ones(2, requires_grad=True); b = a.clone(); (b * 3).sum().backward()\n",
    "one-line blocks": (
        "import torch\nb = torch.zeros(2)\nfor i in range(3): b = b + i\nif True: c = b * 2; d = c.view(2, 1)\n"
        "while b.sum() < 20: b.add_(1)\n"
    ),
    "one-line functions": (
        "import torch\ndef f(x): return x * 2\ndef g(t):\n    u = t * 2; v = u + 1\n    return v\n"
        "w = g(f(torch.ones(2)))\n"
    ),
}


@pytest.mark.parametrize("source", SHARED_LINES.values(), ids=list(SHARED_LINES))
def test_statements_sharing_a_line_are_steps_of_their_own(source: str) -> None:
    trace = run_source(source)
    assert trace.summary is not None and trace.summary.status == "ok"
    assert len(trace.steps) > source.count("\n")  # more steps than lines
    sources = [s.source for s in trace.steps]
    for part in ("b = a.clone()", "c = b * 2", "d = c.view(2, 1)", "u = t * 2", "v = u + 1"):
        if part.split(" =")[0] + " =" in source and part in source:
            assert part in sources, (part, sources)
    ns: dict[str, Any] = {}
    exec(source, ns)
    last = trace.steps[-1].tensors
    for name, value in ns.items():
        if isinstance(value, torch.Tensor) and name in last:
            assert last[name].values == value.tolist(), name


def _run(source: str, tmp_path: Path, name: str = "main.py", **kwargs: Any) -> tuple[list[Step], Any]:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    trace = run_source(path.read_text(), origin=str(path), **kwargs)
    return trace.steps, trace.summary


def _plain_python(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(path)], cwd=path.parent, capture_output=True, text=True, timeout=120, check=False
    )


def test_any_module_is_imported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    source = "import os\nprint(os.getcwd())\n"
    steps, summary = _run(source, tmp_path)
    assert summary.status == "ok"
    assert [s.source for s in steps] == ["import os", "print(os.getcwd())"]
    assert steps[1].stdout == _plain_python(tmp_path / "main.py").stdout


def test_a_local_helper_module_is_imported_and_not_stepped(tmp_path: Path) -> None:
    (tmp_path / "helper.py").write_text(
        "import torch\n\ndef scaled(t, k):\n    print('helper', k)\n    out = t * k\n    return out.relu()\n"
    )
    source = """\
    # local helper
    import torch
    from helper import scaled
    torch.manual_seed(0)
    a = torch.randn(4, requires_grad=True)
    b = scaled(a, 3.0)
    b.sum().backward()
    print(a.grad.tolist(), b.tolist())
    """
    steps, summary = _run(source, tmp_path)
    assert summary.status == "ok"
    assert [s.line for s in steps] == [2, 3, 4, 5, 6, 7, 8]  # helper.py's lines are no steps
    assert all(s.function is None and s.depth == 0 for s in steps)
    assert steps[4].stdout == "helper 3.0\n"
    assert steps[4].tensors["b"].grad_fn == "ReluBackward0"
    assert "".join(s.stdout for s in steps) == _plain_python(tmp_path / "main.py").stdout
    torch.manual_seed(0)
    a = torch.randn(4, requires_grad=True)
    (a * 3.0).relu().sum().backward()
    assert steps[-1].tensors["a"].grad is not None
    assert steps[-1].tensors["a"].grad.values == a.grad.tolist()


def test_a_module_loads_with_no_trace_function_and_the_steps_go_on(tmp_path: Path) -> None:
    """An import runs at full speed (no trace function while the module loads, as in plain Python),
    and the statements after it, a failed one's too, are steps as before."""
    (tmp_path / "loaded_untraced.py").write_text(
        "import sys\nTRACED = sys.gettrace() is not None\nprint('loaded', TRACED)\n"
    )
    source = """\
    import torch
    try:
        import no_such_module_here
    except ImportError:
        missing = True
    import loaded_untraced
    a = torch.ones(2) * 3
    print(loaded_untraced.TRACED, a.tolist())
    """
    steps, summary = _run(source, tmp_path)
    assert summary.status == "ok"
    assert [s.line for s in steps][-3:] == [6, 7, 8]
    assert steps[-3].stdout == "loaded False\n"
    assert steps[-2].tensors["a"].values == [3.0, 3.0]
    assert "".join(s.stdout for s in steps) == _plain_python(tmp_path / "main.py").stdout


def test_library_functions_calling_script_functions(tmp_path: Path) -> None:
    source = """\
    # callbacks
    import torch
    def key(t):
        s = t.sum()
        return s.item()
    def f(x):
        y = x ** 3
        return y.sum(dim=0)
    xs = [torch.tensor([3.0]), torch.tensor([1.0, 1.0]), torch.tensor([0.5])]
    order = sorted(xs, key=key)
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    jac = torch.autograd.functional.jacobian(f, x)
    print(jac.shape, [t.tolist() for t in order])
    """
    steps, summary = _run(source, tmp_path)
    assert summary.status == "ok"
    key_steps = [s for s in steps if s.function == "key"]
    assert [s.line for s in key_steps] == [4, 5] * 3  # sorted called key once per item
    assert all(s.depth == 1 for s in key_steps)
    assert "key:t" in key_steps[0].tensors and "key:s" in key_steps[0].tensors
    # jacobian calls f back: f runs without steps of its own; its step names it.
    assert not any(s.function == "f" for s in steps)
    assert [s.hooks for s in steps if s.hooks] == [["f"]]
    last = steps[-1]
    expected = torch.autograd.functional.jacobian(lambda x: (x**3).sum(dim=0), torch.tensor([[1.0, 2.0], [3.0, 4.0]]))
    assert last.tensors["jac"].values == expected.tolist()
    assert [last.tensors[f"order[{i}]"].values for i in range(3)] == [[0.5], [1.0, 1.0], [3.0]]
    assert last.stdout == _plain_python(tmp_path / "main.py").stdout
    assert not any(":" in name for name in last.tensors)  # locals only while their function runs


def test_an_error_inside_a_function_called_from_a_loop(tmp_path: Path) -> None:
    source = """\
    # raises on the third call
    import torch
    def step(w, i):
        w = w * 2
        if i == 2:
            w = w.view(5)
        return w
    w = torch.ones(4)
    for i in range(4):
        w = step(w, i)
    print("never")
    """
    steps, summary = _run(source, tmp_path)
    plain = _plain_python(tmp_path / "main.py")
    assert plain.returncode == 1 and "RuntimeError" in plain.stderr and "line 6, in step" in plain.stderr
    assert summary.status == "error" and summary.errors == 1
    error = steps[-1]
    assert (error.status, error.line, error.function, error.depth) == ("error", 6, "step", 1)
    assert error.error is not None and error.error.type == "RuntimeError"
    with pytest.raises(RuntimeError) as raised:
        torch.ones(4).view(5)
    assert error.error.message == str(raised.value)
    assert error.tensors["step:w"].values == [8.0] * 4  # before the failing statement
    assert error.tensors["w"].values == [4.0] * 4
    assert [s.line for s in steps if s.function is None] == [2, 3, 8, 10, 10]
    assert not any(s.stdout for s in steps)


def test_errors_a_try_of_the_script_handles_are_caught_steps(tmp_path: Path) -> None:
    source = """\
    import torch
    def bad(t):
        return t.view(7)
    try:
        x = bad(torch.ones(2))
    except RuntimeError as e:
        print("caught", type(e).__name__)
    print("after")
    """
    steps, summary = _run(source, tmp_path)
    assert summary.status == "ok"
    raised = [s for s in steps if s.caught is not None]
    assert [(s.line, s.function) for s in raised] == [(3, "bad"), (5, None)]
    assert all(s.caught is not None and s.caught.except_line == 6 for s in raised)
    assert "".join(s.stdout for s in steps) == "caught RuntimeError\nafter\n"


def test_hooks_torch_calls_during_backward_print_into_the_backward_step(tmp_path: Path) -> None:
    source = """\
    import torch
    def show(g):
        doubled = g * 2
        print("hook", g.tolist())
        return doubled
    a = torch.ones(2, requires_grad=True)
    a.register_hook(show)
    (a * 3).sum().backward()
    """
    steps, _ = _run(source, tmp_path)
    assert not any(s.function == "show" for s in steps)
    assert steps[-1].stdout == "hook [3.0, 3.0]\n"
    assert [s.hooks for s in steps] == [[], [], [], [], ["show"]]  # the backward step names the hook
    assert step_json(steps[-1])["hooks"] == ["show"] and "hooks" not in step_json(steps[-2])
    assert steps[-1].tensors["a"].grad is not None and steps[-1].tensors["a"].grad.values == [6.0, 6.0]


@pytest.mark.parametrize(("code", "status", "error"), [("0", "ok", None), ("None", "ok", None), ("3", "error", "3")])
def test_sys_exit_ends_the_run(tmp_path: Path, code: str, status: str, error: str | None) -> None:
    steps, summary = _run(f"import sys\nx = 1\nsys.exit({code})\nprint('never')\n", tmp_path)
    assert [s.line for s in steps] == [1, 2, 3]
    assert summary.status == status
    assert (steps[-1].error.message if steps[-1].error else None) == error


def test_keep_going_continues_with_the_next_top_level_statement(tmp_path: Path) -> None:
    steps, summary = _run("x = 1\ny = undefined\nprint('on')\n", tmp_path, keep_going=True)
    assert [(s.line, s.status) for s in steps] == [(1, "ok"), (2, "error"), (3, "ok")]
    assert steps[-1].stdout == "on\n"
    assert summary.errors == 1


@pytest.mark.parametrize(
    ("source", "limits", "stopped_by"),
    [
        ("n = 0\nwhile True:\n    n += 1\n", Limits(max_steps=50), "max_steps"),
        ("for i in range(10):\n    print('x' * 40)\n", Limits(max_output=100), "max_output"),
    ],
)
def test_limits_end_the_run(source: str, limits: Limits, stopped_by: str) -> None:
    trace = run_source(source, limits=limits)
    assert trace.summary is not None and trace.summary.stopped_by == stopped_by
    assert trace.summary.status == "error" and trace.steps[-1].status == "error"


def test_the_timeout_ends_a_busy_loop(tmp_path: Path) -> None:
    steps, summary = _run("while True:\n    pass\n", tmp_path, limits=Limits(timeout=0.5))
    assert summary.stopped_by == "timeout"
    assert steps[-1].error is not None and steps[-1].error.type == "TimeoutExceeded"


def test_the_python_state_is_restored(tmp_path: Path) -> None:
    before = (sys.stdout, sys.stdin, list(sys.path), sys.argv, sys.gettrace())
    _run("import sys\nprint(sys.argv)\nraise SystemExit(2)\n", tmp_path)
    assert (sys.stdout, sys.stdin, list(sys.path), sys.argv, sys.gettrace()) == before


def test_breakpoint_does_not_take_the_tracer_away(tmp_path: Path) -> None:
    steps, summary = _run("x = 1\nbreakpoint()\ny = 2\nprint(x + y)\n", tmp_path)
    assert summary.status == "ok"
    assert [s.line for s in steps] == [1, 2, 3, 4] and steps[-1].stdout == "3\n"


def test_what_the_script_writes_to_stderr_is_shown_with_its_output(tmp_path: Path) -> None:
    steps, _ = _run("import sys\nprint('out')\nsys.stderr.write('err\\n')\n", tmp_path)
    assert [s.stdout for s in steps] == ["", "out\n", "err\n"]


LOOPS = """\
import torch
import torch.nn.functional as F
torch.manual_seed(0)
w = torch.randn(3, 1, requires_grad=True)
x, y = torch.randn(8, 3), torch.randn(8, 1)
def loss_of(w):
    out = x @ w
    for _ in range(2):
        out = out * 1.0
    return F.mse_loss(out, y)
for epoch in range(4):
    loss = loss_of(w)
    loss.backward()
    with torch.no_grad():
        w -= 0.1 * w.grad
        w.grad.zero_()
n = 0
while True:
    n += 1
    if n == 3:
        break
pairs = [(w, 1), (w, 2)]
for t, k in pairs: s = t * k
"""


def test_loops_and_their_summaries() -> None:
    """Turns, totals, nesting (a loop in a function called in a loop), grad-mode blocks and calls;
    then the loop events a view makes from them."""
    from tcopy_cli.render.loops import LoopTracker

    trace = run_source(LOOPS)
    tracker = LoopTracker()
    events = [loop_json(s) for step in trace.steps for s in tracker.feed(step)]
    events += [loop_json(s) for s in tracker.close()]
    where = [(s.line, s.loops, s.contexts, s.calls) for s in trace.steps]
    # against plain Python: 4 epochs, each calling loss_of
    # (whose own loop turns twice), the update inside no_grad; a while loop of 3 turns
    epochs = [s for s in where if s[0] == 12]
    assert [s[1][0].iteration for s in epochs] == [1, 2, 3, 4] and all(s[1][0].total == 4 for s in epochs)
    inner = [s for s in where if s[0] == 9]
    assert [(s[1][0].iteration, s[1][1].iteration, s[1][1].total) for s in inner] == [
        (e, k, 2) for e in range(1, 5) for k in (1, 2)
    ]
    assert all(s[3] and s[3][0].function == "loss_of" and s[3][0].line == 12 for s in inner)
    assert [s[2] for s in where if s[0] in (15, 16)] == [("no_grad",)] * 8
    assert [s[1][0].iteration for s in where if s[0] == 19] == [1, 2, 3]
    assert [(s[1][0].iteration, s[1][0].total) for s in where if s[0] == 23] == [(1, 2), (2, 2)]
    assert len(events) == 4 * 1 + 1 + 1 + 1  # loss_of's loop once per epoch, the epochs, the while, the pairs


def test_a_scripts_default_device_ends_with_its_run() -> None:
    """torch.set_default_device pushes a mode onto the process's stack; the next run in the same
    process (the Python API, the REPL's caller, a test) must not find it there."""
    from torch.overrides import _get_current_function_mode_stack

    before = list(_get_current_function_mode_stack())
    trace = run_source('torch.set_default_device("cpu")\nx = torch.ones(2)')
    assert [s.status for s in trace.steps] == ["ok", "ok"]
    assert list(_get_current_function_mode_stack()) == before
    assert torch.get_default_device() == torch.device("cpu")
