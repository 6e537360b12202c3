"""The parent's one strict decoder: whatever bytes a worker writes, ``FrameDecoder.decode`` returns a
frame the worker sends, records built and typed, or raises ``WireError``; nothing else.

A Hypothesis fuzz feeds it random bytes, valid frames mutated byte by byte and value by value,
deep nesting, huge numbers and values of the wrong type.
"""

from __future__ import annotations

import dataclasses
import json
import typing
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tcopy_cli.pipeline import run_source
from tcopy_cli.trace import frames, records, wire

SCRIPTS = [
    "a = torch.arange(4.0, requires_grad=True)\nb = a.sigmoid()\nb.mul_(2)\nn = b.detach().numpy()\n"
    "views = {'x': a[1:], 1: [a, (a, a)]}\n",
    "def f(x):\n    y = x * 2\n    return y.exp()\nw = torch.randn(2, 2, requires_grad=True)\nz = f(w)\n"
    "z.sum().backward()\nk = torch.tensor([float('nan'), float('inf'), -0.0])\nq = [1][3]  # expect: IndexError\n",
    "for i in range(3):\n    with torch.no_grad():\n        s = torch.ones(1) * i\n",
]


def valid_lines() -> list[bytes]:
    """Every kind of frame, as the worker's own encoder writes them."""
    out: list[bytes] = []
    for trace in (run_source(src, keep_going=True, graph=True) for src in SCRIPTS):
        codec = wire.StepCodec()
        out.append(wire.frame_line({"kind": "start", "info": wire.encode(trace.info)}))
        for step in trace.steps:
            out.append(
                wire.frame_line({"kind": "running", "line": step.line, "col": 0, "end_line": step.line, "end_col": 1})
            )
            out.append(wire.frame_line({"kind": "step", "step": codec.encode(step)}))
        out.append(wire.frame_line({"kind": "end", "summary": wire.encode(trace.summary)}))
    for kind, fields in {
        "experiment": {"expression": "x.clone()", "run": "run 1"},
        "compare": {"rows": [{"expression": "x", "warnings": [], "error": None}]},
        "done": {"errors": 0},
        "refused": {"line": 1, "column": 2, "message": "m"},
        "usage_error": {"message": "m"},
        "run_error": {"message": "m"},
        "internal_error": {"type": "T", "message": "m"},
        "hook": {"result": {"a": [1, 2.5, None, True]}},
    }.items():
        out.append(wire.frame_line({"kind": kind, **fields}))
    return [line[:-1] for line in out]


VALID = valid_lines()


def test_every_frame_the_worker_writes_decodes_to_its_records() -> None:
    decoder = frames.FrameDecoder()
    kinds = set()
    for line in VALID:
        frame = decoder.decode(line)
        kinds.add(frame.kind)
        if frame.kind == "step":
            assert isinstance(frame.data["step"], records.Step)
    assert kinds == set(frames.KINDS) - {"rejected"}


def decode_or_refuse(decoder: frames.FrameDecoder, line: bytes) -> None:
    """The property: a frame whose every record is of its type, or WireError; nothing else raised."""
    try:
        frame = decoder.decode(line)
    except frames.WireError:
        return
    assert frame.kind in frames.KINDS
    for value in frame.data.values():
        check_types(value)


def check_types(value: Any, depth: int = 0) -> None:
    """Every record in a decoded frame holds what its annotations say (spot-checked through nesting)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        hints = typing.get_type_hints(type(value), vars(records))
        for f in dataclasses.fields(value):
            v = getattr(value, f.name)
            tp = hints[f.name]
            if tp in (str, int, bool):
                assert type(v) is tp, (type(value).__name__, f.name, v)
            check_types(v, depth + 1)
    elif isinstance(value, (list, tuple)):
        for x in value[:5]:
            check_types(x, depth + 1)
    elif isinstance(value, dict):
        for x in list(value.values())[:5]:
            check_types(x, depth + 1)


FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(st.binary(max_size=300))
def test_random_bytes(data: bytes) -> None:
    decode_or_refuse(frames.FrameDecoder(), data)


@FUZZ
@given(st.sampled_from(VALID), st.data())
def test_valid_frames_mutated_byte_by_byte(line: bytes, data: st.DataObject) -> None:
    edits = data.draw(st.lists(st.tuples(st.integers(0, len(line)), st.sampled_from(["flip", "cut", "insert", "drop"]),
                                         st.binary(min_size=1, max_size=8)), max_size=4))  # fmt: skip
    mutated = bytearray(line)
    for at, how, blob in edits:
        at = min(at, len(mutated))
        if how == "flip" and at < len(mutated):
            mutated[at] ^= blob[0] or 1
        elif how == "cut":
            del mutated[at:]
        elif how == "insert":
            mutated[at:at] = blob
        elif at < len(mutated):
            del mutated[at]
    decode_or_refuse(frames.FrameDecoder(), bytes(mutated))


ODD = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=5), st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.sampled_from([{"__r": ["Step"]}, {"__same": 1}, {"__tuple": "x"}, {"__float": "nan"}, {"__items": [[1]]},
                     {"__frozenset": [[]]}, {"__r": ["TensorRecord", *[0] * 23]}, [[[[[]]]]]]),
)  # fmt: skip


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, list):
        for i, x in enumerate(value):
            out += _paths(x, (*prefix, i))
    elif isinstance(value, dict):
        for k, x in value.items():
            out += _paths(x, (*prefix, k))
    return out


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, list):
        return [_replace(x, rest, new) if i == head else x for i, x in enumerate(value)]
    return {k: _replace(x, rest, new) if k == head else x for k, x in value.items()}


@FUZZ
@given(st.sampled_from(VALID), st.data())
def test_valid_frames_with_a_value_of_the_wrong_type(line: bytes, data: st.DataObject) -> None:
    parsed = orjson.loads(line)
    path = data.draw(st.sampled_from(_paths(parsed)[1:]))
    new = data.draw(ODD)
    decoder = frames.FrameDecoder()
    for earlier in VALID[: VALID.index(line)]:  # references to tensors sent before resolve
        try:
            decoder.decode(earlier)
        except frames.WireError:
            pass
    decode_or_refuse(decoder, json.dumps(_replace(parsed, path, new)).encode())


@pytest.mark.parametrize("depth", [300, 1_023, 1_100, 200_000])
def test_deep_nesting_anywhere_is_refused_or_bounded(depth: int) -> None:
    for line in (
        b"[" * depth + b"]" * depth,
        b'{"kind": "hook", "result": ' + b"[" * depth + b"]" * depth + b"}",
        b'{"kind": "hook", "result": ' + b'{"a":' * depth + b"1" + b"}" * depth + b"}",
        b'{"kind": "hook", "result": ["\\ud800", ' + b"[" * depth + b"]" * depth + b"]}",  # the standard parser
    ):
        decode_or_refuse(frames.FrameDecoder(), line)


def test_a_tensor_record_nested_in_its_own_grad_is_bounded() -> None:
    grad_at = 1 + [f.name for f in dataclasses.fields(records.TensorRecord)].index("grad")
    rec = wire.encode(records.TensorRecord([1], "f", "cpu", None, "", 1, "S1", 0, [], False, True, None, None, 0))
    rec["__r"][grad_at] = "@@"
    left, right = json.dumps(rec).split('"@@"')
    for depth in (100, 600):
        nested = left * depth + "null" + right * depth
        line = '{"kind": "step", "step": {"__r": ["Step", 1, 1, "x", "ok", null, "", [], {"x": ' + nested + "}"
        step = wire.StepCodec().encode(records.Step(1, 1, "x", "ok", None, "", [], {}, {}))
        rest = json.dumps(step["__r"][1 + [f.name for f in dataclasses.fields(records.Step)].index("arrays") :])
        decode_or_refuse(frames.FrameDecoder(), (line + ", " + rest[1:] + "}}").encode())


@pytest.mark.parametrize(
    "number",
    [b"9" * 5000, b"-" + b"9" * 30, b"1e400", b"-1e400", b"1" + b"0" * 20, b"18446744073709551616", b"1.0", b"true"],
)
def test_big_numbers_are_refused_where_an_int_belongs(number: bytes) -> None:
    line = b'{"kind": "done", "errors": ' + number + b"}"
    with pytest.raises(frames.WireError):
        frames.FrameDecoder().decode(line)
    with pytest.raises(frames.WireError):  # the standard parser's path too
        frames.FrameDecoder().decode(b'{"kind": "refused", "line": ' + number + b', "column": 1, "message": "\\ud800"}')


def test_a_frame_past_the_size_bounds_is_refused_before_it_is_parsed() -> None:
    with pytest.raises(frames.WireError, match="bytes"):
        frames.parse(b" " * (frames.MAX_FRAME_BYTES + 1))
    with pytest.raises(frames.WireError, match="lists and objects"):
        frames.parse(b"[" * (frames.MAX_CONTAINERS + 1))


def test_unknown_and_missing_fields_are_refused_for_every_kind() -> None:
    for kind, fields in frames._SCHEMA.items():
        with pytest.raises(frames.WireError):
            frames.FrameDecoder().decode(json.dumps({"kind": kind, **dict.fromkeys(fields, None), "more": 1}).encode())
        if fields:
            with pytest.raises(frames.WireError, match="without"):
                frames.FrameDecoder().decode(json.dumps({"kind": kind}).encode())


# --- records a worker made up, valid by the schema, through the explain pass and every view ------

NAMES = ["x", "y", "w", "x[0]", "f:h", "m.weight", "d['k']", "", "S1", "V1", "float32", "cpu", "error", "view", "G1"]


def made_up(rng: Any, tp: Any, depth: int = 0) -> Any:
    """A random value of annotation ``tp``: what a worker could send that the decoder accepts."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is str:
        if rng.random() < 0.2:
            return "".join(chr(rng.randint(0, 0x2FFF)) for _ in range(rng.randint(0, 6)))
        return rng.choice(NAMES)
    if tp is int:
        return rng.randint(-(2**63), 2**64 - 1) if rng.random() < 0.2 else rng.choice([0, 1, 2, 3, -1, 10**6])
    if tp is bool:
        return rng.random() < 0.5
    if tp is Any:
        return rng.choice([None, 1, 2.5, [1.0, 2.0], [[1, 2], [3]], "nan", {"index": "basic"}, [], {}])
    if origin in (typing.Union, type(int | None)):
        inner = next(a for a in args if a is not type(None))
        return None if rng.random() < 0.4 or depth > 3 else made_up(rng, inner, depth)
    if origin is typing.Literal:
        return rng.choice(args)
    many = rng.randint(0, 3 if depth < 3 else 0)
    if origin is list:
        return [made_up(rng, args[0], depth + 1) for _ in range(many)]
    if origin is tuple:
        return tuple(made_up(rng, args[0], depth + 1) for _ in range(many))
    if origin is frozenset:
        return frozenset(rng.randint(0, 3) for _ in range(many))
    if origin is dict:
        return {rng.choice(NAMES): made_up(rng, args[1], depth + 1) for _ in range(many)}
    hints = typing.get_type_hints(tp, vars(records))
    return tp(**{f.name: made_up(rng, hints[f.name], depth + 1) for f in dataclasses.fields(tp)})


@pytest.mark.parametrize("seed", range(4))
def test_made_up_steps_go_through_the_explain_pass_and_every_view(seed: int) -> None:
    """A worker's made-up facts may be nonsense (a span past its storage, an edge to nowhere, a
    name of any text): what the decoder accepts, the parent explains and draws without raising."""
    import io
    import random

    from rich.console import Console
    from views import draw

    from tcopy_cli.pipeline import explainer
    from tcopy_cli.printable import printable_record
    from tcopy_cli.render import ViewOptions
    from tcopy_cli.render.jsonl import JsonRenderer
    from tcopy_cli.render.markdown import MarkdownRenderer
    from tcopy_cli.render.table import TableRenderer

    rng = random.Random(seed)
    for _ in range(40):
        view = ViewOptions(graph=rng.random() < 0.5, memory=rng.random() < 0.5, only_changed=rng.random() < 0.3)
        renderers = [
            TableRenderer(Console(file=io.StringIO(), width=100), view),
            MarkdownRenderer(io.StringIO(), view),
            JsonRenderer(io.StringIO(), view),
        ]
        decoder, codec, explain = frames.FrameDecoder(), wire.StepCodec(), explainer().explain
        shown = []
        for _ in range(5):
            step = made_up(rng, records.Step)
            unlisted = {k: abs(v) + 1 for k, v in step.unlisted.items()}
            status = "ok" if step.error is None else "error"
            step = records.evolve(step, index=len(shown) + 1, status=status, observed=True, unlisted=unlisted)
            try:
                frame = decoder.decode(wire.frame_line({"kind": "step", "step": codec.encode(step)})[:-1])
            except frames.WireError:
                continue
            shown.append(printable_record(explain(frame.data["step"])))
        draw(renderers, view, records.RunInfo("0", "0", "cpu", "s.py"), shown, records.RunSummary(len(shown), 1))


def test_brackets_in_names_are_not_counted_as_lists() -> None:
    # 1,003 items of one list sharing memory: each record names the other 1,002 (xs[0], xs[1] ...).
    line = json.dumps({"kind": "hook", "result": ["xs[0]", 'd["k"]', "[1., 2.]"] * 700_000}).encode()
    assert line.count(b"[") > frames.MAX_CONTAINERS
    assert len(frames.parse(line)["result"]) == 2_100_000
