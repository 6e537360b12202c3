"""The explain pass apart from the run: facts first, notes from the records alone."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from recorded import run_cli

from tcopy_cli import run_script
from tcopy_cli.engine import run_source as run_facts
from tcopy_cli.explain import Explainer, Rule, StepFacts
from tcopy_cli.pipeline import NOTE_RULES, explain_trace, explainer
from tcopy_cli.pipeline import run_source as run_explained
from tcopy_cli.render.jsonl import error_json, note_json, step_json
from tcopy_cli.trace.records import ErrorInfo, Note

LEAF = "a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)\n"

# Every family of notes, and an error the catalogue knows, one caught and one it doesn't.
SCRIPT = (
    LEAF
    + "b = a\n"
    + "v = a[1:]\n"
    + "d = a.data\n"
    + "c = a.clone()\n"
    + "y = (a * a).sum()\n"
    + "d.mul_(2)\n"
    + "y.backward()\n"
    + "t = torch.tensor(a)\n"
    + "w = torch.zeros(3)\n"
    + "n = w.numpy()\n"
    + "m = w + 1; w.add_(1)  # expect: RuntimeError\n"
    + "try:\n"
    + "    q = torch.ones(2).view(3)\n"
    + "except RuntimeError:\n"
    + "    pass\n"
    + "a.grad = None\n"
    + "breakpoint()\n"
    + "total = torch.zeros(())\n"
    + "hist = []\n"
    + "for i in range(2):\n"
    + "    total = total + (a * i).sum()\n"
    + "    hist.append(total)\n"
    + "k = torch.arange(3) / 2\n"
    + "h = torch.ones(2, dtype=torch.float16); h += torch.ones(2, dtype=torch.float64)\n"
    + "g2 = torch.autograd.grad((a * 2).sum(), a)\n"
    + "e = a.exp(); e.retain_grad()\n"
    + "lin = torch.nn.Linear(1, 1); lin.double()\n"
    + "z = torch.linalg.inv(torch.ones(2))\n"
)


def test_the_run_records_facts_only() -> None:
    trace = run_facts(SCRIPT, keep_going=True)
    assert trace.steps
    for step in trace.steps:
        assert step.explanations == [] and step.notes == []
        if step.error is not None:
            assert step.error.explanation == "" and not step.error.explained
    caught = [s.caught for s in trace.steps if s.caught is not None]
    assert len(caught) == 1 and caught[0].error.type == "RuntimeError" and caught[0].except_line == 15


def test_explaining_after_the_run_equals_explaining_as_it_runs() -> None:
    """The pass is a function of the records: post hoc, streamed (the CLI) and the API agree."""
    after = explain_trace(run_facts(SCRIPT, keep_going=True))
    result = run_cli(["run", "-e", SCRIPT, "-f", "json", "--keep-going"])
    streamed = [e for e in map(json.loads, result.stdout.splitlines()) if e["event"] == "step"]
    assert len(streamed) == len(after.steps)
    for event, step in zip(streamed, after.steps):
        assert event["notes"] == step.notes
        assert event["explanations"] == [note_json(n) for n in step.explanations]
        assert event["error"] == (error_json(step.error) if step.error else None)
    assert [s.notes for s in run_explained(SCRIPT, keep_going=True).steps] == [s.notes for s in after.steps]
    assert run_script(LEAF + "b = a").steps[-1].notes == after.steps[1].notes


def test_every_family_is_explained_with_kinds_and_names() -> None:
    steps = run_explained(SCRIPT, keep_going=True).steps
    kinds = {n.kind for s in steps for n in s.explanations}
    expected = {
        "relation.same-object",
        "relation.view",
        "relation.untracked-alias",
        "relation.copy-in-graph",
        "relation.numpy-array",
        "change.untracked-write",
        "saved.silent-change",
        "grad.received",
        "grad.corrupted",
        "debugger.no-op",
        "grad.reset",
        "warning.copy-construct",
        "error.caught",
        "graph.chained",
        "graph.collected",
    }
    assert expected <= kinds, expected - kinds
    for step in steps:
        for n in step.explanations:
            assert set(n.tensors) <= set(step.tensors) | set(step.arrays), (n.kind, n.tensors)
            assert n.severity in ("info", "warning")
    view = next(n for s in steps for n in s.explanations if n.kind == "relation.view")
    assert view.tensors == ("v", "a")
    silent = next(n for s in steps for n in s.explanations if n.kind == "saved.silent-change")
    assert silent.severity == "warning" and "a" in silent.tensors and not silent.text.startswith("⚠")


def test_notes_strings_are_the_explanations_with_the_warning_mark() -> None:
    for step in run_explained(SCRIPT, keep_going=True).steps:
        assert step.notes == [("⚠ " if n.severity == "warning" else "") + n.text for n in step.explanations]
        event = step_json(step)
        assert event["notes"] == step.notes
        assert [e["kind"] for e in event["explanations"]] == [n.kind for n in step.explanations]


def test_errors_say_whether_tcopy_explains_them() -> None:
    steps = run_explained(SCRIPT, keep_going=True).steps
    unknown = steps[-1].error
    assert unknown is not None and unknown.type == "RuntimeError" and not unknown.explained
    assert "no further explanation" in unknown.explanation  # JSON keeps the sentence
    known = run_explained(LEAF + "a.add_(1)").steps[-1].error
    assert known is not None and known.explained and "a leaf that requires grad" in known.explanation
    assert known.headline == "RuntimeError: " + known.message.splitlines()[0]


@pytest.mark.parametrize("rule", NOTE_RULES, ids=lambda r: r.__name__)
def test_each_rule_runs_alone_on_the_records(rule: Rule) -> None:
    """A rule needs nothing but the facts (and the state earlier steps left)."""
    steps = run_facts(SCRIPT, keep_going=True).steps
    alone = Explainer([rule])
    everything = explainer()
    said = 0
    for step in steps:
        own = alone.explain(step).explanations
        full = everything.explain(step).explanations
        said += len(own)
        # The rules before it in the list can't change what it says, only where it appears.
        assert all(n in full for n in own), (rule, step.source)
    # corrupted_grads and grads_not_reset build on grad_changes' notes, rebound_graph_used on what
    # rebinding remembered: alone they say nothing.
    if rule.__name__.startswith("each_new_name") or rule.__name__ == "numpy_aliases":
        # Fallbacks for names no operation-record note explains: where there is no record.
        bare = Explainer([rule])
        said += sum(len(bare.explain(replace(step, ops=[])).explanations) for step in steps)
    assert said > 0 or rule.__name__ in ("corrupted_grads", "grads_not_reset", "rebound_graph_used")


def test_a_new_rule_is_one_function() -> None:
    def big_tensors(f: StepFacts) -> list[Note]:
        return [
            Note("size.big", "info", f"{name} has {len(r.values)} elements", (name,))
            for name, r in f.tensors.items()
            if f.step.index == 2 and isinstance(r.values, list)
        ]

    trace = run_facts(LEAF + "b = a * 2")
    pass_ = Explainer([*NOTE_RULES, big_tensors])
    steps = [pass_.explain(s) for s in trace.steps]
    assert [n.kind for n in steps[1].explanations][-2:] == ["size.big", "size.big"]


def test_the_explained_step_is_a_copy() -> None:
    step = run_facts(LEAF + "b = a").steps[-1]
    explained = explainer().explain(step)
    assert step.explanations == [] and explained.explanations
    assert replace(explained, explanations=[]) == step
    bare = ErrorInfo("RuntimeError", "boom")
    assert bare.explanation == "" and not bare.explained
