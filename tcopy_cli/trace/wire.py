"""A lossless codec for step records between the worker and the parent.

Records are frozen dataclasses of plain data. ``encode`` turns one into JSON-ready
data: ``{"__r": [class name, field values in field order]}`` (positional: field names
would make up most of the bytes of a step), for every dataclass defined in
``tcopy_cli.trace.records`` (the registry), so a field or a record class added there
travels without changes here. Tuples, frozensets, dicts with keys that are not strings
(None, bools, ints) and non-finite floats are tagged so that they come back as they went.
The parent reads frames with ``tcopy_cli.trace.frames``, its one strict decoder, from the
records' annotations; nothing is ever evaluated or imported from the wire.

Lines are written by orjson (the standard encoder took about a tenth of the worker's time
a step), and by the standard encoder where orjson refuses the data (ints past 64 bits,
lone surrogates, nesting past 254 levels). orjson writes a non-finite float as ``null``,
so ``encode`` tags those: ``{"__float": "nan"}``.

``StepCodec`` encodes a stream of steps: a tensor record equal to the last one sent under
its name travels as a reference to it (in a loop, most tensors are unchanged by most
statements); ``frames.FrameDecoder`` resolves the references.

Nothing here imports torch: the parent decodes without it.
"""

from __future__ import annotations

import dataclasses
import json
import operator
from collections.abc import Callable
from typing import Any

import orjson

from tcopy_cli.trace import records

_REC = "__r"
_SAME = "__same"
_FLOAT = "__float"
_SPECIAL = ("__tuple", "__frozenset", "__set", "__items", _REC, _SAME, _FLOAT)


def registry() -> dict[str, type]:
    """Record classes by name: every dataclass defined in records.py."""
    return {
        name: obj
        for name, obj in vars(records).items()
        if isinstance(obj, type) and dataclasses.is_dataclass(obj) and obj.__module__ == records.__name__
    }


_REGISTRY = registry()


class WireError(ValueError):
    """Data that is not an encoded record."""


# What goes on the wire as it is: a float only where finite (``x - x`` is 0.0 then, NaN
# otherwise), so each check below reads ``type(v) in _PLAIN or (type(v) is float and not v - v)``.
_PLAIN = (type(None), bool, int, str)
# Field names of each record class (dataclasses.fields is slow; this runs for every record).
_FIELDS: dict[type, tuple[str, ...]] = {
    cls: tuple(f.name for f in dataclasses.fields(cls)) for cls in _REGISTRY.values()
}
assert all(f.init for cls in _REGISTRY.values() for f in dataclasses.fields(cls)), "records are built positionally"
assert not any(hasattr(cls, "__post_init__") or hasattr(cls, "__slots__") for cls in _REGISTRY.values())


# Annotations of the fields that go on the wire as they are: JSON writes them itself.
_AS_IS = frozenset({"str", "int", "bool", "list[str]", "list[int]", "str | None", "int | None"})


def _getter(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    get = operator.attrgetter(*names)
    return get if len(names) > 1 else lambda obj: (get(obj),)


# All fields of a record in one call (a tuple, in field order).
_VALUES: dict[type, Callable[[Any], tuple[Any, ...]]] = {cls: _getter(names) for cls, names in _FIELDS.items()}
# Positions (in the encoded list, after the class name) of the fields that may hold more
# than JSON itself writes: fields annotated as str, int, bool or lists of str or int go
# as they are (the parent checks every annotation on arrival).
_NESTED: dict[type, tuple[int, ...]] = {
    cls: tuple(i + 1 for i, f in enumerate(dataclasses.fields(cls)) if str(f.type) not in _AS_IS)
    for cls in _REGISTRY.values()
}


def _encode_record(cls: type, obj: Any, given: tuple[int, Any] | None = None) -> dict[str, list[Any]]:
    """``{"__r": [class name, fields...]}``; ``given``: (position, data) of a field encoded already."""
    out = [cls.__name__, *_VALUES[cls](obj)]
    skip = -1
    if given is not None:
        skip, out[given[0]] = given
    for i in _NESTED[cls]:
        v = out[i]
        if i != skip and type(v) not in _PLAIN and (type(v) is not float or v - v):
            out[i] = encode(v)
    return {_REC: out}


def encode(obj: Any) -> Any:
    """JSON-ready data for a record (or any value a record holds)."""
    cls = type(obj)
    if cls in _PLAIN:
        return obj
    if cls is float:
        return obj if not obj - obj else {_FLOAT: "nan" if obj != obj else ("inf" if obj > 0 else "-inf")}
    if cls in _NESTED:
        return _encode_record(cls, obj)
    # The common containers first (checked by exact type: this runs for every value of every step).
    if cls is list:
        for x in obj:
            t = type(x)
            if t not in _PLAIN and (t is not float or x - x):
                return [encode(x) for x in obj]
        return obj
    if cls is dict:
        return _encode_dict(obj) if obj else obj
    if cls is tuple:
        return {"__tuple": [encode(x) for x in obj]}
    if isinstance(obj, (bool, int, str)):  # subclasses (e.g. IntEnum) travel as their base
        return obj
    if isinstance(obj, float):  # the value it holds (float.__float__: not a subclass's own __float__)
        return encode(float.__float__(obj))
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        raise WireError(f"{cls.__module__}.{cls.__qualname__} is not a record class")
    if isinstance(obj, list):
        return [encode(x) for x in obj]
    if isinstance(obj, tuple):
        return {"__tuple": [encode(x) for x in obj]}
    if isinstance(obj, frozenset):
        return {"__frozenset": [encode(x) for x in obj]}
    if isinstance(obj, set):
        return {"__set": [encode(x) for x in obj]}
    if isinstance(obj, dict):
        return _encode_dict(obj)
    raise WireError(f"can't send a {type(obj).__name__} between processes")


def _encode_dict(obj: dict[Any, Any]) -> Any:
    if all(isinstance(k, str) for k in obj) and not any(k in obj for k in _SPECIAL):
        return {k: v if type(v) in _PLAIN or (type(v) is float and not v - v) else encode(v) for k, v in obj.items()}
    return {"__items": [[encode(k), encode(v)] for k, v in obj.items()]}


# One encoder for every frame: ``json.dumps`` with options builds a new one per call, which
# cost as much as the encoding of a step. No circular check: ``encode`` makes fresh lists
# and dicts from frozen records, so there is no cycle to find.
_COMPACT = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), check_circular=False)


def dumps(obj: Any) -> str:
    """One line of JSON for a record (``frame_line`` without its newline, as text)."""
    return frame_line(encode(obj))[:-1].decode("utf-8", "surrogatepass")


def frame_line(frame: Any) -> bytes:
    """A frame of ``encode``'s data as one line of UTF-8 JSON, newline included."""
    try:
        return orjson.dumps(frame, option=orjson.OPT_APPEND_NEWLINE)
    except TypeError:  # orjson.JSONEncodeError: a value orjson does not write (see the module's doc)
        return _COMPACT.encode(frame).encode("ascii") + b"\n"


_STEP_TENSORS = _FIELDS[records.Step].index("tensors")


def _same_record(a: records.TensorRecord | None, b: records.TensorRecord | None) -> bool:
    """Whether two tensor records are the same, exactly (``==`` alone holds 0.0 and -0.0 equal).

    The observer reads each content once (a small tensor holding the same bytes gets the
    same ``values`` object), so same values are the same object; anything else is sent.
    """
    if a is b:
        return True
    if a is None or b is None or a.values is not b.values:
        return False
    return _same_record(a.grad, b.grad) and a == b


class StepCodec:
    """Encodes one run's steps in order (the worker).

    It remembers the last tensor record that went under each name; a record equal to it
    travels as ``{"__same": 1}``, which the parent's ``frames.FrameDecoder`` decodes to the
    record it had under that name.
    """

    def __init__(self) -> None:
        self._last: dict[str, records.TensorRecord] = {}

    def encode(self, step: records.Step) -> Any:
        last = self._last
        tensors: dict[str, Any] = {}
        for name, rec in step.tensors.items():
            if _same_record(last.get(name), rec):
                tensors[name] = {_SAME: 1}
            else:
                last[name] = rec
                tensors[name] = encode(rec)
        return _encode_record(records.Step, step, (_STEP_TENSORS + 1, tensors))


Position = tuple[int, int, int, int]
"""A statement's line, column, end line and end column (as in ast)."""


class RunningStack:
    """Which statement the worker is in: statements announced (``running`` frames) and not yet
    reported (``step`` frames).

    A statement that calls a script function is reported after the function's own
    statements, so announcements nest; a loop header announced again while it is on
    top is not pushed twice. The parent keeps one from the frames; the worker keeps the same
    one, so that it leaves out a ``running`` frame the parent would not push (a loop's
    header at the start of each turn after the first).
    """

    def __init__(self) -> None:
        self.positions: list[Position] = []

    KEPT = 1000
    """Announcements kept (the innermost ones: the script's own nesting is far less deep)."""

    def running(self, position: Position) -> None:
        if not self.positions or self.positions[-1] != position:
            self.positions.append(position)
            if len(self.positions) > self.KEPT:
                del self.positions[0]

    def finished(self, line: int) -> None:
        """The statement at ``line`` was reported: it and what was announced after it are off the
        stack (looked for from the top, where it is found at once: loop headers stay below)."""
        positions = self.positions
        for i in range(len(positions) - 1, -1, -1):
            if positions[i][0] == line:
                del positions[i:]
                return

    @property
    def current(self) -> Position | None:
        return self.positions[-1] if self.positions else None


__all__ = ["Position", "RunningStack", "StepCodec", "WireError", "dumps", "encode", "frame_line", "registry"]
