"""Notes that say the same thing about different tensors are told once in tables and Markdown.

The merged note must be exactly the notes it replaces: each other note's text is the first's
with that note's names and labels put in. JSON keeps every note.
"""

from __future__ import annotations

import json
from typing import Any

from recorded import run_cli

from tcopy_cli.pipeline import run_source as run_explained
from tcopy_cli.render.notegroups import grouped_notes, template
from tcopy_cli.trace.records import Note

SCRIPT = """\
import torch
import torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 1))
params = list(model.parameters())
t = torch.zeros(2)
ts = [t] * 12
sd = model.state_dict()
a = t.view(2)
c = t.view(2)
"""


def _note(text: str, *names: str, kind: str = "relation.same-object") -> Note:
    return Note(kind=kind, severity="info", text=text, tensors=names)


def _filled(template: Any, tokens: tuple[str, ...]) -> str:
    """A template's text with ``tokens`` put back in its gaps."""
    pieces, gaps = template[2], template[3]
    return "".join(p + (tokens[g] if i < len(gaps) else "") for i, (p, g) in enumerate(zip(pieces, [*gaps, 0])))


def _python() -> dict[str, Any]:
    ns: dict[str, Any] = {}
    exec(SCRIPT, ns)
    return ns


def test_notes_differing_only_in_names_are_one_note() -> None:
    notes = [
        _note(f"ts[{i}] is the same tensor object as t: assignment only adds a name.", f"ts[{i}]", "t")
        for i in range(5)
    ]
    other = _note("x is a new tensor.", "x", kind="relation.new")
    (merged, kept) = grouped_notes([*notes, other])
    assert merged.text == notes[0].text + " The same holds for ts[1…4]."
    assert merged.tensors == ("ts[0]", "t", "ts[1]", "ts[2]", "ts[3]", "ts[4]")
    assert kept is other


def test_pairs_and_labels_that_differ_are_named_with_each_note() -> None:
    def shares(i: int) -> Note:
        return _note(f"sd[{i}] shares m{i}'s memory (storage S{i + 1}); m{i} keeps its grad.", f"sd[{i}]", f"m{i}")

    (merged,) = grouped_notes([shares(i) for i in range(9)])
    # each note's own subject first, its labels with it
    tail = "sd[1] (S2) and m1; sd[2] (S3) and m2; sd[3] (S4) and m3; sd[4] (S5) and m4; sd[5] (S6) and m5; "
    assert merged.text.endswith(" The same holds for " + tail + "sd[6] (S7) and m6; and 2 more.")


def test_notes_that_differ_in_anything_else_stay_apart() -> None:
    notes = [
        _note("a is a view of t: version 1.", "a", "t", kind="relation.view"),
        _note("b is a view of t: version 2.", "b", "t", kind="relation.view"),  # a number, not a name
        _note("c is a view of t: version 1.", "c", "t", kind="relation.other"),  # another kind
        _note("x is a view of t: version 1.", "x", "t", kind="relation.view"),
    ]
    out = grouped_notes(notes)
    # "a" is also a word there: "a is a view" is not the sentence "x is a view" with x for a
    assert out == notes
    # a name is a whole name: xs is not x followed by s
    assert template(_note("xs holds x.", "x"))[1] == ("x",)


def test_each_other_note_is_named_subject_first_even_where_its_text_quotes_the_source_first() -> None:
    # `x.detach()`: p shares x's memory -- x comes first in the text, p is what the note is about
    def detached(p: str, x: str, label: str) -> Note:
        return _note(f"`{x}.detach()`: {p} shares {x}'s memory ({label}).", p, x, kind="relation.detached")

    (merged,) = grouped_notes([detached("p", "x", "S1"), detached("q", "y", "S2")])
    assert merged.text.endswith(" The same holds for q (S2) and y.")


def test_notes_about_names_holding_a_backtick_stay_apart() -> None:
    # in Markdown a backtick in one name would pair with one in the next, making a code span of the text between
    notes = [_note(f'd["{k}`"] is the same tensor object as {v}.', f'd["{k}`"]', v) for k, v in ("ax", "by", "cz")]
    assert grouped_notes(notes) == notes


def test_the_same_note_twice_is_told_once() -> None:
    note = _note("x is the same tensor object as y.", "x", "y")
    assert grouped_notes([note, note]) == [note]


def test_each_merged_note_is_the_first_with_its_own_names_put_in() -> None:
    trace = run_explained(SCRIPT)
    merged_any = 0
    for step in trace.steps:
        groups: dict[Any, list[tuple[str, ...]]] = {}
        for note in step.explanations:
            key, tokens = template(note)
            assert _filled(key, tokens) == note.text
            groups.setdefault(key, []).append(tokens)
        for key, members in groups.items():
            for tokens in members:
                assert _filled(key, tokens) in [n.text for n in step.explanations]
        merged_any += sum(len(m) > 1 for m in groups.values())
        assert len(grouped_notes(step.explanations)) == len(groups)
    assert merged_any >= 3  # params, ts and sd; a and c are views made by two statements


def test_table_tells_them_once_and_json_keeps_every_note() -> None:
    ns = _python()
    assert all(item is ns["t"] for item in ns["ts"])
    params = dict(ns["model"].named_parameters())
    for key, value in ns["sd"].items():
        assert value.untyped_storage().data_ptr() == params[key].untyped_storage().data_ptr()
        assert not value.requires_grad and params[key].requires_grad

    table = run_cli(["run", "-e", SCRIPT, "--no-color"], env={"COLUMNS": "200"})
    assert table.exit_code == 0, table.output
    flat = " ".join(table.output.split())  # notes wrap at the width
    assert "The same holds for ts[1…11]." in flat
    assert flat.count("is the same tensor object as t:") == 1
    assert "The same holds for params[1] and model.0.bias; params[2] and model.2.weight;" in flat
    assert 'The same holds for sd["0.bias"] (S2) and model.0.bias; sd["2.weight"] (S3) and model.2.weight;' in flat
    assert flat.count("is a view of t") == 2  # two statements, two notes

    lines = run_cli(["run", "-e", SCRIPT, "--format", "json"]).output.splitlines()
    steps = [json.loads(line) for line in lines]
    notes = [n["text"] for s in steps if s.get("event") == "step" for n in s["explanations"]]
    for i in range(12):
        assert f"ts[{i}] is the same tensor object as t: assignment only adds a name" in " ".join(notes)
    assert sum("shares model." in n for n in notes) == 6 == len(ns["sd"])

    markdown = run_cli(["run", "-e", SCRIPT, "--format", "markdown"]).output
    assert "The same holds for ts\\[1…11\\]." in markdown or "The same holds for ts[1…11]." in markdown
    assert markdown.count("is the same tensor object as t:") == 1
