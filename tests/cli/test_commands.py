"""What every command shares: help text, the limit options and their defaults, limits
that really apply, and internal errors reported as one short line."""

from __future__ import annotations

import dataclasses
import threading
import time

import pytest
import typer.main
from cli_runs import invoke

from tcopy_cli import supervise
from tcopy_cli.cli import COMMANDS, app
from tcopy_cli.cli.options import LIMIT_OPTIONS
from tcopy_cli.engine import session as runner_module
from tcopy_cli.limits import Limits, view_max_steps

LIMIT_FLAGS = {f.name: "--" + f.name.replace("_", "-") for f in dataclasses.fields(Limits)}


def _commands() -> dict[str, typer.main.click.Command]:  # type: ignore[name-defined]
    return typer.main.get_command(app).commands  # type: ignore[attr-defined, no-any-return]


def test_the_app_lists_exactly_the_command_table() -> None:
    assert list(_commands()) == list(COMMANDS)


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_has_help(command: str) -> None:
    cmd = _commands()[command]
    assert cmd.help and len(cmd.help.strip()) > 20
    result = invoke(command, "--help")
    assert result.exit_code == 0 and "Usage" in result.stdout
    for flag in LIMIT_FLAGS.values():
        assert flag in result.stdout, (command, flag)


def test_every_limit_has_an_option() -> None:
    assert set(LIMIT_OPTIONS) == set(LIMIT_FLAGS)


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_accepts_every_limit_with_the_same_default(command: str) -> None:
    defaults = Limits()
    reference = {p.name: p for p in _commands()["run"].params}
    params = {p.name: p for p in _commands()[command].params}
    for name, flag in LIMIT_FLAGS.items():
        assert name in params, (command, flag)
        option = params[name]
        assert option.opts == [flag]
        # --max-steps: the view's own default (``view_max_steps``), decided once the format is known
        assert option.default == (None if name == "max_steps" else getattr(defaults, name)), (command, flag)
        assert option.help == reference[name].help
        assert repr(option.type) == repr(reference[name].type)  # same bounds (min=...)


def test_the_step_limit_depends_on_the_view() -> None:
    """A loop that never ends stops at 10,000 steps where people read the output; JSON
    (the complete record) goes on to 100,000, so a long training loop finishes there."""
    endless = "while True:\n    a = 1\n"
    table = invoke("run", "-e", endless)
    assert table.exit_code == 1
    assert "too many steps (limit 10,000; raise it with --max-steps)" in table.stderr
    # JSON: the same loop passes 10,000 steps and is stopped by the iteration limit instead
    json_run = invoke("run", "-e", endless, "-f", "json", "--max-iterations", "10500")
    assert json_run.exit_code == 1
    assert "limit 10,500; raise it with --max-iterations" in json_run.stdout
    assert view_max_steps("json") == Limits().max_steps == 100_000
    assert view_max_steps("table") == view_max_steps("markdown") == view_max_steps(None) == 10_000


# One script per command that makes a 100-element tensor; --max-elements 2 must stop it.
BIG = "a = torch.ones(100, requires_grad=True)"
LIMITED = {
    "run": (["run", "-e", BIG, "-f", "json"], None),
    "graph": (["graph", "-e", BIG + "\nb = a * 2"], None),
    "examples": (["examples", "clone", "--run"], None),
    "compare": (["compare", "x.clone()", "--setup", BIG.replace("a =", "x =")], None),
    "repl": (["repl"], BIG + "\n:quit\n"),
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_limits_apply_in_every_command(command: str) -> None:
    args, stdin = LIMITED[command]
    free = invoke(*args, input=stdin)
    limited = invoke(*args, "--max-elements", "2", input=stdin)
    assert free.exit_code == 0 and "max-elements" not in free.stdout + free.stderr
    if command == "graph":  # the graph as it was when the error step stopped the script: empty
        assert "MulBackward0" in free.stdout and limited.exit_code == 1 and limited.stdout == ""
        return
    assert "max-elements" in limited.stdout + limited.stderr, (limited.stdout, limited.stderr)
    assert limited.exit_code == (0 if command == "repl" else 1)  # the REPL reports the error step and goes on


INTERNAL = {
    "run": ["run", "-e", "a = 1"],
    "graph": ["graph", "-e", "a = 1"],
    "examples": ["examples", "clone", "--run"],
    "compare": ["compare", "x.clone()"],
    "repl": ["repl"],
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_internal_errors_are_one_short_line(command: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(spec: str) -> str:
        raise RuntimeError("boom")

    monkeypatch.setattr(runner_module, "resolve_device", broken)
    if command in ("run", "examples", "graph"):  # these resolve the device in the worker: break the parent's side

        def broken_worker(*args: object, **kwargs: object) -> None:
            raise RuntimeError("boom")

        monkeypatch.setattr(supervise, "run_in_worker", broken_worker)
    if command == "repl":  # the REPL's worker resolves the device too: break its session's start

        def broken_session(*args: object, **kwargs: object) -> None:
            raise RuntimeError("boom")

        monkeypatch.setattr("tcopy_cli.pipeline.worker_session", broken_session)
    result = invoke(*INTERNAL[command], input=":quit\n")
    assert result.exit_code == 1
    assert isinstance(result.exception, SystemExit)
    assert result.stderr.strip().startswith("tcopy: internal error (RuntimeError: boom)")
    assert "Traceback" not in result.stderr + result.stdout


def test_the_watchdog_reports_a_stuck_operation_through_the_callback(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the caller decides what a stuck operation does: the runner reports, never exits."""
    monkeypatch.setattr(runner_module, "HARD_TIMEOUT_GRACE", 0.05)
    reports: list[str] = []

    def stuck(on_stuck: object) -> None:  # off the main thread: no SIGALRM, only the watchdog thread
        with runner_module.watchdog(0.05, lambda: "line 3", on_stuck):  # type: ignore[arg-type]
            time.sleep(0.6)

    worker = threading.Thread(target=stuck, args=(reports.append,))
    worker.start()
    worker.join()
    assert reports == [
        "timed out after 0.05 s (--timeout) in line 3; a single operation did not return, so tcopy stopped the process."
    ]
    quiet = threading.Thread(target=stuck, args=(None,))
    quiet.start()
    quiet.join()  # no callback: nothing reported, the process goes on
    assert len(reports) == 1


def test_the_repl_names_no_flag_it_does_not_take_when_a_loop_repeats_a_note() -> None:
    """A ``for`` block's later turns say a note like an earlier one's in one line; the command line
    adds that --all-steps shows it, which the REPL, past its start, has no way to give."""
    block = "import torch\np = torch.ones(3, requires_grad=True)\nfor i in range(3):\n"
    block += "    (p * 2).sum().backward()\n    p.grad.zero_()\n\n:quit\n"
    out = invoke("repl", "--no-color", input=block).stdout
    assert "a note like step 4's, now about p" in out, out
    assert "--all-steps" not in out, out
