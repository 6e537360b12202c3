"""One escaping for everything tcopy prints: every string of every record, the header, the refused
line echoed under its caret, and every stderr message reach the terminal (and the exports)
made ``printable``; JSON Lines keeps the exact text.

The records are built from their annotations (no list of fields here): a field added to a record
is covered by these tests without changes.
"""

from __future__ import annotations

import dataclasses
import importlib
import io
import json
import subprocess
import types
import typing
from pathlib import Path
from typing import Any

import cli_runs
import pytest
from rich.console import Console
from views import draw

from tcopy_cli.printable import UNPRINTABLE, printable, printable_record
from tcopy_cli.render import ViewOptions
from tcopy_cli.render.jsonl import JsonRenderer
from tcopy_cli.render.markdown import MarkdownRenderer
from tcopy_cli.render.table import TableRenderer
from tcopy_cli.trace import frames, records, wire

ROOT = Path(__file__).resolve().parents[2]

ATTACKS = {
    "CSI clear screen": "\x1b[2J\x1b[H",
    "OSC 0 window title": "\x1b]0;pwned\x07",
    "OSC 8 hyperlink": "\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\",
    "OSC 52 clipboard": "\x1b]52;c;cm0gLXJmIH4=\x07",
    "carriage return": "safe\roverwritten",
    "C1 CSI": "\x9b2J\x9b31m",
    "bidi overrides": "a\u202eevil\u202c\u2066b\u2069\u200e\u200f\u061c\u202a\u202b\u202d\u2067\u2068",
    "NUL, BEL, backspace": "\x00\x07\x08\x7f",
    "line separators and a lone surrogate": "\u2028\u2029\ud800",
}


def raw_controls(text: str) -> list[str]:
    """The characters ``printable`` escapes that are in ``text`` (none may be)."""
    return sorted(set(UNPRINTABLE.findall(text)))


# --- records from their annotations -------------------------------------------------------

HINTS = {cls: typing.get_type_hints(cls, vars(records)) for cls in wire.registry().values()}


def make(tp: Any, text: str, depth: int = 0) -> Any:
    """A value of annotation ``tp`` whose every string is ``text`` (with a suffix where keys must differ)."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is str:
        return text
    if tp is int:
        return 1
    if tp is bool:
        return True
    if tp is Any:
        return [text, {text: text}]
    if origin in (types.UnionType, typing.Union):
        inner = next(a for a in args if a is not type(None))
        return make(inner, text, depth) if depth < 2 else None
    if origin is typing.Literal:
        return args[0]
    if origin is list:
        return [make(args[0], text, depth + 1)]
    if origin is tuple:
        return (make(args[0], text, depth + 1),)
    if origin is frozenset:
        return frozenset({1})
    if origin is dict:
        return {text + "k": make(args[1], text, depth + 1)}
    if dataclasses.is_dataclass(tp):
        return tp(**{f.name: make(HINTS[tp][f.name], text, depth + 1) for f in dataclasses.fields(tp)})
    raise TypeError(tp)


def strings(obj: Any) -> list[str]:
    """Every string in a record, keys included."""
    if isinstance(obj, str):
        return [obj]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return [s for f in dataclasses.fields(obj) for s in strings(getattr(obj, f.name))]
    if isinstance(obj, dict):
        return [s for k, v in obj.items() for s in (*strings(k), *strings(v))]
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [s for x in obj for s in strings(x)]
    return []


def consistent(step: records.Step, text: str) -> records.Step:
    """``step`` with the indexes and graph names that point inside it pointing where they may."""
    op = step.ops[0]
    op = records.evolve(
        op,
        index=0,
        bumped=[0],
        inputs=[records.evolve(i, from_op=None) for i in op.inputs],
        results=[
            records.evolve(r, relations=[records.evolve(rel, input=0, op=None) for rel in r.relations])
            for r in op.results
        ],
    )
    node = make(records.GraphNode, text)
    graph = records.GraphRecord(roots={text: text + "k"}, nodes={text + "k": records.evolve(node, next=[None])},
                                views={text: text})  # fmt: skip
    notes = [records.evolve(n, op=0) for n in step.explanations]
    return records.evolve(step, ops=[op], graph=graph, explanations=notes)


def hostile_step(text: str, index: int = 1, **changes: Any) -> records.Step:
    step = consistent(make(records.Step, text), text)
    step = records.evolve(step, index=index, status="error", observed=True, **changes)
    error = records.ErrorInfo(type=text, message=text, explanation=text, expected=False)
    return records.evolve(step, error=error, unlisted={text: 2})


@pytest.mark.parametrize("cls", list(wire.registry().values()), ids=lambda c: c.__name__)
def test_every_string_of_every_record_class_is_made_printable(cls: type) -> None:
    for attack in ATTACKS.values():
        record = make(cls, "name" + attack)
        texts = strings(record)
        # every string field got the attack (some classes have none; a Literal field holds its own values)
        assert all(raw_controls(t) for t in texts if t not in ("info", "warning"))
        shown = printable_record(record)
        assert not [t for t in strings(shown) if raw_controls(t)], cls
        assert strings(shown) == [printable(t) for t in texts]  # each escaped, nothing else changed
        assert type(shown) is cls and printable_record(make(cls, "plain")) == make(cls, "plain")


@pytest.mark.parametrize("name", list(ATTACKS))
def test_no_control_sequence_reaches_the_table_markdown_html_or_svg(name: str) -> None:
    attack = "t" + ATTACKS[name]
    info = records.RunInfo(tcopy=attack, torch=attack, device=attack, source=attack, title=attack,
                           degraded=[attack], confinement=attack)  # fmt: skip
    loop = records.LoopContext(line=3, iteration=1, total=3, entry=1)
    steps = [hostile_step(attack, i + 1, loops=(records.evolve(loop, iteration=i + 1),), line=4) for i in range(3)]
    steps.append(hostile_step(attack, 4, line=6))
    # The worker's frames of these steps are never taken as plain (the views' fast path).
    decoder, codec = frames.FrameDecoder(), wire.StepCodec()
    for step in steps:
        frame = decoder.decode(wire.frame_line({"kind": "step", "step": codec.encode(step)})[:-1])
        assert not frame.plain
    shown = [printable_record(s) for s in steps]
    view = ViewOptions(graph=True, memory=True)
    console = Console(file=io.StringIO(), width=120, no_color=True, force_terminal=False, record=True)
    table = TableRenderer(console, view)
    markdown_out = io.StringIO()
    markdown = MarkdownRenderer(markdown_out, view)
    draw([table, markdown], view, printable_record(info), shown, records.RunSummary(steps=4, errors=4))
    outputs = {
        "table": console.file.getvalue(),  # type: ignore[attr-defined]
        "markdown": markdown_out.getvalue(),
        "html": console.export_html(clear=False),
        "svg": console.export_svg(clear=False, title=printable(attack)),
    }
    for fmt, text in outputs.items():
        assert "\x1b" not in text and not raw_controls(text), (fmt, raw_controls(text))
        if fmt in ("table", "markdown"):
            assert printable(attack)[:12] in text.replace("\\\\", "\\"), fmt  # shown, escaped


def test_json_lines_keep_the_exact_text_escaped_by_the_encoder() -> None:
    attack = "".join(ATTACKS.values())
    out = io.StringIO()
    JsonRenderer(out).step(hostile_step(attack))
    line = out.getvalue()
    assert not raw_controls(line)  # C1, bidi controls, separators, lone surrogates as \\uNNNN too
    event = json.loads(line)
    assert event["stdout"] == attack and event["error"]["message"] == attack


# --- the decoder's fast path: a frame taken as plain holds nothing printable would change ----


def test_a_frame_is_plain_only_where_no_string_needs_escaping() -> None:
    """However the worker writes a string (orjson, the standard encoder, ASCII or not, escapes
    of its own), a frame holding one that ``printable`` changes is not plain."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    special = st.sampled_from(
        ["\x00", "\x08", "\x0c", "\r", "\x1b", "\x7f", "\x80", "\x9b", "\x9f", "\u061c", "\u200e", "\u200f",
         "\u2028", "\u2029", "\u202a", "\u202e", "\u2066", "\u2069", "\ud800", "\udfff", "\\", "é", "\t", "\n"]
    )  # fmt: skip
    text = st.lists(st.text(max_size=3) | special, max_size=6).map("".join)

    @settings(max_examples=500, deadline=None)
    @given(text)
    def check(s: str) -> None:
        encodings = [
            json.dumps({"kind": "usage_error", "message": s}, ensure_ascii=True).encode(),
            json.dumps({"kind": "usage_error", "message": s}, ensure_ascii=False).encode("utf-8", "surrogatepass"),
            wire.frame_line({"kind": "usage_error", "message": s})[:-1],
        ]
        for line in encodings:
            try:
                frame = frames.FrameDecoder().decode(line)
            except frames.WireError:  # a lone surrogate written raw is not UTF-8
                continue
            read = frame.data["message"]
            assert read == json.loads(line)["message"]  # (two lone surrogates written escaped read as a pair)
            if printable(read) != read:
                assert not frame.plain, (s, line)

    check()


# --- through the real command line -----------------------------------------------------------


def tcopy(*args: str, cwd: Path, stdin: str = "") -> subprocess.CompletedProcess[bytes]:
    env = cli_runs.environ("FORCE_COLOR", PYTHONPATH=str(ROOT), COLUMNS="120")
    return cli_runs.tcopy(*args, input=stdin.encode(), env=env, cwd=cwd, timeout=180, text=False)


def no_raw(out: bytes) -> None:
    text = out.decode("utf-8", "surrogateescape")
    assert "\x1b" not in text and not raw_controls(text), raw_controls(text)


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_a_file_named_with_a_title_sequence_and_a_screen_clear_is_shown_escaped(fmt: str, tmp_path: Path) -> None:
    name = "demo\x1b]0;pwned\x07\x1b[2J\x9b2J.py"
    (tmp_path / name).write_text("# Title \x1b]0;t\x07\nimport torch\nx = torch.ones(2)\n")
    proc = tcopy("run", name, "--format", fmt, "--no-color", "--export", "out.svg", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    no_raw(proc.stdout)
    no_raw(proc.stderr)
    assert b"demo\\x1b]0;pwned\\x07\\x1b[2J\\x9b2J.py" in proc.stdout.replace(b"\\\\", b"\\")
    svg = (tmp_path / "out.svg").read_text()
    assert not raw_controls(svg) and "\\x1b]0;t\\x07" in svg


def test_the_export_title_of_a_page_is_escaped(tmp_path: Path) -> None:
    (tmp_path / "s.py").write_text("# T \x1b]0;t\x07\u202e\nimport torch\nx = torch.ones(2)\n")
    for out in ("out.html", "out.cast"):
        proc = tcopy("run", "s.py", "--export", out, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        text = (tmp_path / out).read_text()
        assert not raw_controls(text.replace("\x1b[", "")), out  # a cast keeps tcopy's own colours
        assert "\\x1b]0;t\\x07\\u202e" in text or "\\\\x1b]0;t\\\\x07\\\\u202e" in text, out


def test_a_refused_line_is_echoed_escaped_under_its_caret(tmp_path: Path) -> None:
    # Python can't parse the line; the echo under it holds ESC sequences (cursor up, erase, title).
    line = 'x = ("\x1b[1A\x1b[2K\x1b]0;pwned\x07", 1 2)'
    (tmp_path / "s.py").write_text("import torch\n" + line + "\n")
    proc = tcopy("run", "s.py", cwd=tmp_path)
    assert proc.returncode == 1
    no_raw(proc.stderr)
    err = proc.stderr.decode()
    echoed = printable(line)
    assert f"   2 | {echoed}" in err, err
    # the caret sits under the column as shown: after the escapes before it, as long as they are
    column = int(err.split("column ")[1].split(":")[0])
    lines = err.splitlines()
    caret = lines[lines.index(next(x for x in lines if x.endswith(echoed))) + 1]
    assert caret.rstrip().endswith("^") and caret.index("^") == len("   2 | ") + len(printable(line[: column - 1]))


def test_an_unparsable_line_is_echoed_escaped(tmp_path: Path) -> None:
    (tmp_path / "s.py").write_text('import torch\nx = ("\x1b]0;t\x07" +\n')
    proc = tcopy("run", "s.py", "--trust", cwd=tmp_path)
    assert proc.returncode == 1
    no_raw(proc.stderr)
    assert b"syntax error" in proc.stderr


def test_every_stderr_message_path_is_escaped(capsys: pytest.CaptureFixture[str]) -> None:
    """``fail``, ``say``, ``show_rejection``, the watchdog's last word and the closing line of a
    run: each prints its message through ``printable``."""
    import typer

    cli_app = importlib.import_module("tcopy_cli.cli.app")
    from tcopy_cli.cli.formats import OutputFormat
    from tcopy_cli.cli.present import Presenter, show_rejection
    from tcopy_cli.errors import ScriptRejected

    attack = "".join(ATTACKS.values())
    cli_app.say(attack)
    with pytest.raises(typer.Exit):
        cli_app.fail(attack, 1)
    show_rejection(ScriptRejected(attack, 1, 3), attack + "\n")
    presenter = Presenter(Console(file=io.StringIO()), OutputFormat.table)
    presenter.errors.append(hostile_step(attack))
    with pytest.raises(typer.Exit):
        presenter.finish(records.RunSummary(steps=1, errors=1), attack)
    with pytest.raises(typer.Exit):  # a command's unexpected exception: "internal error (...)"
        cli_app.guarded(lambda: (_ for _ in ()).throw(RuntimeError(attack)))()
    err = capsys.readouterr().err
    assert err.count("tcopy:") >= 5
    assert not raw_controls(err) and "\x1b" not in err
    assert printable(attack) in err
