"""The worker's record codec: every record type comes back exactly as it went through the
parent's decoder (``frames``), and a field holding another type is refused."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tcopy_cli.pipeline import run_source
from tcopy_cli.render import jsonl
from tcopy_cli.trace import decoders, frames, records, wire


def loads(line: str | bytes, tp: Any = Any) -> Any:
    """What the parent makes of one line of ``wire``'s JSON, read as an annotation ``tp`` says."""
    data = line.encode("utf-8", "surrogatepass") if isinstance(line, str) else line
    return decoders.decode_as(tp, frames.parse(data.rstrip(b"\n")))


def back(value: Any, tp: Any = Any) -> Any:
    return loads(wire.dumps(value), tp)


def frame(step_data: Any) -> bytes:
    """A ``step`` frame of ``StepCodec.encode``'s data."""
    return wire.frame_line({"kind": "step", "step": step_data})[:-1]


def resolved(decoder: frames.FrameDecoder, line: bytes) -> records.Step:
    step: records.Step = decoder.decode(line).data["step"]
    return step


# Scripts that between them produce every record class: tensors with grads, arrays,
# a graph with saved tensors, saved-tensor events, errors, a caught error, nested function
# steps, and the explain pass's notes (the worker sends explained steps).
SCRIPTS = [
    "import numpy as np\n"
    "a = torch.arange(4.0, requires_grad=True)\n"
    "b = a.sigmoid()\n"
    "b.mul_(2)\n"
    "n = torch.ones(3).numpy()\n"
    "views = {'x': a[1:], 1: [a, (a, a)]}\n",
    "def f(x):\n    y = x * 2\n    return y.exp()\n"
    "w = torch.randn(2, 2, requires_grad=True)\n"
    "z = f(w)\n"
    "z.sum().backward()\n"
    "g = w.grad\n"
    "k = torch.tensor([float('nan'), float('inf'), -0.0])\n"
    "c = torch.tensor([1+2j])\n"
    "q = [1][3]\n",
    "try:\n    r = [1][3]\nexcept IndexError:\n    r = 0\n",
    "for i in range(2):\n    with torch.no_grad():\n        s = torch.ones(1) * i\n",
]


JSON_EVENTS: dict[type, Any] = {
    records.RunInfo: jsonl.start_json,
    records.Step: jsonl.step_json,
    records.RunSummary: jsonl.end_json,
}
"""The JSON Lines event each record ``all_records`` returns is written as."""


def all_records() -> list[Any]:
    out: list[Any] = []
    for src in SCRIPTS:
        trace = run_source(src, keep_going=True, graph=True)
        out += [trace.info, *trace.steps, trace.summary]
    return out


def walk(obj: Any) -> set[type]:
    found: set[type] = set()
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        found.add(type(obj))
        for f in dataclasses.fields(obj):
            found |= walk(getattr(obj, f.name))
    elif isinstance(obj, dict):
        for v in obj.values():
            found |= walk(v)
    elif isinstance(obj, (list, tuple, set, frozenset)):
        for v in obj:
            found |= walk(v)
    return found


def test_every_record_class_round_trips_exactly() -> None:
    recs = all_records()
    covered: set[type] = set()
    for rec in recs:
        covered |= walk(rec)
        again = back(rec, type(rec))
        assert type(again) is type(rec)
        assert again == rec
        assert repr(again) == repr(rec)  # same field types too (tuple stays tuple, frozenset stays frozenset)
        event = JSON_EVENTS[type(rec)]
        assert json.dumps(event(again)) == json.dumps(event(rec))
    # the scripts exercise every record class there is (a new class needs a case here)
    assert covered == set(wire.registry().values()), set(wire.registry().values()) - covered


def test_registry_picks_up_every_dataclass_in_records() -> None:
    names = {n for n, o in vars(records).items() if dataclasses.is_dataclass(o) and o.__module__ == records.__name__}
    assert set(wire.registry()) == names
    assert {"Step", "RunInfo", "RunSummary", "TensorRecord", "SavedEvent"} <= names


@pytest.mark.parametrize(
    "value",
    [
        (1, "a", (2.5, None)),
        frozenset({1, 2, 3}),
        {3: "int key", -1: "negative", None: "none"},
        {"__t": "Step", "__tuple": [1]},
        {"__float": "nan"},
        [float("inf"), -0.0, 1e308, 2**63 - 1, -(2**63), 2**64 - 1],
        [float("-inf"), 0.1, {"x": float("inf")}, (float("inf"),)],
        {"s": "\ud800 lone surrogate \x00 and é"},
    ],
)
def test_plain_values_round_trip(value: Any) -> None:
    again = back(value)
    assert again == value and repr(again) == repr(value)


def test_an_int_past_64_bits_is_read_as_orjson_reads_it() -> None:
    """A float in plain data (a tensor's values hold none such: 64 bits is torch's widest int); a field
    annotated int refuses it; past a double, refused."""
    assert back([2**80]) == [float(2**80)] and back(["\ud800", 2**80]) == ["\ud800", float(2**80)]
    with pytest.raises(frames.WireError):
        back(records.LoopContext(line=1, iteration=2**80), records.LoopContext)
    for line in (b"[" + b"9" * 5000 + b"]", b'["\\ud800", ' + b"9" * 5000 + b"]"):
        with pytest.raises(frames.WireError):
            loads(line)


def _same(a: Any, b: Any) -> bool:
    """Equal, with NaN equal to NaN and 0.0 not to -0.0 (repr tells both apart)."""
    return repr(a) == repr(b)


INT64 = st.integers(-(2**63), 2**64 - 1)  # the ints on the wire (past them: test_an_int_past_64_bits...)
json_like = st.recursive(
    st.none() | st.booleans() | INT64 | st.floats() | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=8) | INT64 | st.none(), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(json_like)
def test_any_value_comes_back_whichever_encoder_writes_the_line(value: Any) -> None:
    """orjson writes most lines, the standard encoder the rest (big ints, lone surrogates): both read back the same."""
    line = wire.frame_line({"v": wire.encode(value)})
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert _same(loads(line)["v"], value)
    assert _same(back(value), value)


def test_non_finite_floats_travel_tagged_so_orjson_can_write_them() -> None:
    value = {"d": [float("nan"), float("inf"), -float("inf"), -0.0, 2.5]}
    line = wire.frame_line(wire.encode(value))
    assert b"null" not in line and b"NaN" not in line and b"Infinity" not in line
    assert line == wire.orjson.dumps(wire.encode(value), option=wire.orjson.OPT_APPEND_NEWLINE)  # orjson wrote it
    assert _same(loads(line), value)
    # A float subclass travels as a float; a plain dict with the tag's key as a dict.
    assert _same(back(type("F", (float,), {})(float("nan"))), float("nan"))
    assert back({"__float": "inf"}) == {"__float": "inf"}

    # ... by the value it holds: its own __float__ (a --trust script's code) is not called
    class Odd(float):
        def __float__(self) -> float:
            raise RuntimeError("called")

    assert _same(back([Odd(2.5), Odd(float("-inf"))]), [2.5, float("-inf")])
    # What orjson refuses, the standard encoder writes (as ASCII).
    for refused, read in ((2**64, float(2**64)), ("\ud800", "\ud800")):
        line = wire.frame_line(wire.encode([refused]))
        assert line.isascii() and loads(line) == [read]
    # Text is UTF-8 on the wire.
    assert "é→".encode() in wire.frame_line(wire.encode(["é→"]))


def test_unknown_classes_are_refused() -> None:
    @dataclasses.dataclass
    class Foreign:
        x: int

    with pytest.raises(wire.WireError):
        wire.dumps(Foreign(1))
    with pytest.raises(wire.WireError, match="expected a RunInfo record"):
        loads('{"__r": ["Popen", "true"]}', records.RunInfo)
    with pytest.raises(wire.WireError, match="record"):  # no record where plain data belongs
        loads('{"__r": ["RunInfo", "x"]}')
    fields = len(dataclasses.fields(records.RunSummary))
    with pytest.raises(wire.WireError, match=f"RunSummary has {fields} fields, not {fields + 1}"):
        loads(json.dumps({"__r": ["RunSummary", *[0] * (fields + 1)]}), records.RunSummary)
    with pytest.raises(wire.WireError):
        wire.dumps(object())
    # a reference means something only as a tensor of a step in a stream of steps
    with pytest.raises(wire.WireError):
        loads('{"__same": 1}')
    # set members and keys: no tuples, and ints whose hashes collide are refused
    with pytest.raises(wire.WireError, match="can't be a list"):
        loads('{"__frozenset": [[1, 2]]}')
    with pytest.raises(wire.WireError, match="can't be a float"):  # past 64 bits: a float, which no set holds
        loads(json.dumps({"__frozenset": [k * (2**61 - 1) for k in range(1, 200)]}))
    m = 2**61 - 1
    colliding = [r + k * m for r in range(8) for k in range(-4, 8) if -(2**63) <= r + k * m < 2**64]
    assert len(colliding) > 64
    with pytest.raises(wire.WireError, match="collide"):
        loads(json.dumps({"__frozenset": colliding}))
    with pytest.raises(wire.WireError, match="collide"):
        loads(json.dumps({"__items": [[k, 0] for k in colliding]}))
    assert loads(json.dumps({"__frozenset": list(range(1000))})) == frozenset(range(1000))
    # a tagged float is one of the three non-finite ones
    for bad in ('"NaN"', '"1.5"', "1", "null", '["nan"]'):
        with pytest.raises(wire.WireError, match="__float is one of"):
            loads('{"__float": ' + bad + "}")
    # a field holds what its annotation says (a loop turn of Infinity would count forever)
    turn = json.dumps({"__r": ["LoopContext", 3, 1e308, None, 1, False]})
    with pytest.raises(wire.WireError, match=r"LoopContext\.iteration can.t be float"):
        loads(turn, records.LoopContext)
    with pytest.raises(wire.WireError, match=r"LoopContext\.line can.t be bool"):
        loads(json.dumps({"__r": ["LoopContext", True, 1, None, 1, False]}), records.LoopContext)


def test_a_stream_of_steps_sends_unchanged_tensors_once() -> None:
    """Both ends of StepCodec rebuild every step exactly, and a record equal to the last
    one sent under its name travels as a reference (decoded to the same object)."""
    src = (
        "a = torch.zeros(3)\n"
        "b = torch.ones(3, requires_grad=True)\n"
        "for _ in range(3):\n"
        "    a.add_(1)\n"
        "    c = (b * 2).sum()\n"
        "    c.backward()\n"
        "z = torch.tensor([0.0])\n"
        "z.data.neg_()\n"  # 0.0 -> -0.0: equal as floats, not the same record
    )
    steps = run_source(src).steps
    sender, receiver = wire.StepCodec(), frames.FrameDecoder()
    lines = [frame(sender.encode(s)) for s in steps]
    got = [resolved(receiver, line) for line in lines]
    assert got == steps
    assert [repr(s) for s in got] == [repr(s) for s in steps]
    by_source = {s.source: (s, line) for s, line in zip(got, lines)}
    line = by_source["c.backward()"][1]
    # backward changed only b's grad: a and c went as references
    sent = json.loads(line)["step"]["__r"][1 + [f.name for f in dataclasses.fields(records.Step)].index("tensors")]
    assert sent["a"] == {"__same": 1} and sent["c"] == {"__same": 1} and "__r" in sent["b"]
    negated = by_source["z.data.neg_()"][0].tensors["z"]
    assert repr(negated.values) == "[-0.0]"
    # a reference to a name the receiver never got is refused
    with pytest.raises(wire.WireError, match="never sent"):
        frames.FrameDecoder().decode(by_source["c.backward()"][1])


def test_evolve_is_replace_for_every_record() -> None:
    for rec in all_records():
        assert records.evolve(rec) == rec
        first = dataclasses.fields(rec)[0].name
        value = getattr(rec, first)
        assert records.evolve(rec, **{first: value}) == dataclasses.replace(rec, **{first: value})
        if isinstance(rec, records.Step):
            changed = records.evolve(rec, explanations=[], error=None)
            assert changed == dataclasses.replace(rec, explanations=[], error=None)
            assert repr(changed) == repr(dataclasses.replace(rec, explanations=[], error=None))
    with pytest.raises(TypeError, match="no field 'evil'"):
        records.evolve(all_records()[0], evil=1)


# A value of the wrong kind for each annotation the parent checks (a bool is not an int;
# a list must hold only its element type; None only where the field is optional).
WRONG = {
    "str": [None, 1, True, ["x"]],
    "int": [None, True, 1.0, "1", [1]],
    "bool": [None, 0, 1, "true"],
    "str | None": [1, False, ["x"]],
    "int | None": [True, 1.5, "1"],
    "list[str]": [None, "ab", ["a", 1], ["a", None], [["a"]], {"__tuple": ["a"]}],
    "list[int]": [None, 3, [1, True], [1, 2.0], [None], [[1]]],
}


def test_every_checked_field_refuses_values_of_another_kind() -> None:
    """Each real record, with one checked field replaced by a wrong value, is refused and the
    message names that field; unchanged, it decodes."""
    seen: dict[type, Any] = {}
    for rec in all_records():
        stack = [rec]
        while stack:
            obj = stack.pop()
            if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
                seen.setdefault(type(obj), obj)
                stack += [getattr(obj, f.name) for f in dataclasses.fields(obj)]
            elif isinstance(obj, (list, tuple)):
                stack += list(obj)
            elif isinstance(obj, dict):
                stack += list(obj.values())
    checked = 0
    for cls, obj in seen.items():
        encoded = json.loads(json.dumps(wire.encode(obj)[wire._REC]))  # as the parent reads it
        assert type(decoders.decode_as(cls, {"__r": json.loads(json.dumps(encoded))})) is cls
        for i, f in enumerate(dataclasses.fields(cls)):
            for bad in WRONG.get(str(f.type), []):
                data = json.loads(json.dumps(encoded))
                data[i + 1] = bad
                with pytest.raises(wire.WireError, match=rf"{cls.__name__}\.{f.name}"):
                    decoders.decode_as(cls, {"__r": data})
                checked += 1
    assert checked > 300


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["running", "step"]), st.integers(1, 4))))
def test_running_frames_the_worker_leaves_out_change_nothing_in_the_parent(events: list[tuple[str, int]]) -> None:
    """The worker sends a ``running`` frame only where the parent's stack would push it: the
    parent, fed only those, knows the same running statement at every point as fed all."""
    every, sent, mirror = wire.RunningStack(), wire.RunningStack(), wire.RunningStack()
    for kind, line in events:
        position = (line, 0, line, 1)
        if kind == "running":
            every.running(position)
            if mirror.current != position:  # what worker.Channel.running does
                mirror.running(position)
                sent.running(position)
        else:
            for stack in (every, sent, mirror):
                stack.finished(line)
        assert sent.current == every.current and sent.positions == every.positions


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["running", "step"]), st.integers(1, 6))))
def test_a_finished_statement_leaves_the_stack_as_popping_down_to_it_does(events: list[tuple[str, int]]) -> None:
    """``finished`` looks for the statement from the top: the same stack as popping until it comes off."""
    stack, reference = wire.RunningStack(), []
    for kind, line in events:
        position = (line, 0, line, 1)
        if kind == "running":
            stack.running(position)
            if not reference or reference[-1] != position:
                reference.append(position)
        else:
            stack.finished(line)
            if any(p[0] == line for p in reference):
                while reference and reference.pop()[0] != line:
                    pass
        assert stack.positions == reference


def test_a_steps_unlisted_counts_must_be_counts_by_name() -> None:
    step = run_source("xs = [torch.zeros(1) for _ in range(1002)]").steps[-1]
    assert step.unlisted == {"xs": 2}
    for bad in ({"xs": "2"}, {"xs": 2.0}, {"xs": True}, {"xs": 0}, {"xs": -5}, [["xs", 2]]):
        line = frame(wire.StepCodec().encode(dataclasses.replace(step, unlisted=bad)))  # type: ignore[arg-type]
        with pytest.raises(wire.WireError, match="unlisted"):
            frames.FrameDecoder().decode(line)
    assert resolved(frames.FrameDecoder(), frame(wire.StepCodec().encode(step))).unlisted == {"xs": 2}


def test_a_step_not_observed_carries_no_records() -> None:
    step = run_source("x = torch.zeros(1)").steps[-1]
    empty = dataclasses.replace(step, tensors={}, arrays={}, observed=False)
    assert resolved(frames.FrameDecoder(), frame(wire.StepCodec().encode(empty))).observed is False
    line = frame(wire.StepCodec().encode(dataclasses.replace(step, observed=False)))
    with pytest.raises(wire.WireError, match="observed"):
        frames.FrameDecoder().decode(line)
    line = frame(wire.StepCodec().encode(dataclasses.replace(step, observed=0)))
    with pytest.raises(wire.WireError, match="observed"):
        frames.FrameDecoder().decode(line)
