"""A lossless codec for step records between the worker and the parent.

Records are frozen dataclasses of plain data. ``encode`` turns one into JSON-ready
data: ``{"__r": [class name, field values in field order]}`` (positional: field names
would make up most of the bytes of a step); ``loads`` rebuilds it while ``json.loads``
parses the line (an object hook: Python sees each JSON object once), from the registry of
record classes, which holds every dataclass defined in ``tcopy_cli.trace.records``, so a
field or a record class added there travels without changes here. Tuples, frozensets,
dicts with keys that are not strings (None, bools, ints) and non-finite floats come back
as they went; nothing is ever evaluated or imported from the wire.

Lines are written by orjson (the standard encoder took about a tenth of the worker's time
a step), and by the standard encoder where orjson refuses the data (ints past 64 bits,
lone surrogates, nesting past 254 levels). orjson writes a non-finite float as ``null``,
so ``encode`` tags those: ``{"__float": "nan"}``. The parent reads both with ``json``.

``StepCodec`` is both ends of a stream of steps: a tensor record equal to the last one
sent under its name travels as a reference to it (in a loop, most tensors are unchanged
by most statements).

Nothing here imports torch: the parent decodes without it.
"""

from __future__ import annotations

import dataclasses
import json
import math
import operator
from collections.abc import Callable
from typing import Any

import orjson

from tcopy_cli.trace import records

_REC = "__r"
_SAME = "__same"
_FLOAT = "__float"
_SPECIAL = ("__tuple", "__frozenset", "__set", "__items", _REC, _SAME, _FLOAT)
_NON_FINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


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


# What a field of each simple annotation may hold on the wire (exact types: a bool is not
# an int here, and a float turn of a loop, Infinity, would make the view count forever).
_EXACT = {"str": str, "int": int, "bool": bool}
_ELEMENT = {"list[str]": str, "list[int]": int}
_OPTIONAL = {"str | None": str, "int | None": int}


def _is(kind: type) -> Callable[[Any], bool]:
    return lambda v: type(v) is kind


def _is_list_of(kind: type) -> Callable[[Any], bool]:
    return lambda v: type(v) is list and all(type(x) is kind for x in v)


def _is_optional(kind: type) -> Callable[[Any], bool]:
    return lambda v: v is None or type(v) is kind


def _is_counts(v: Any) -> bool:
    return type(v) is dict and all(type(k) is str and type(n) is int and n > 0 for k, n in v.items())


_CHECKS: dict[str, Callable[[Any], bool]] = {
    **{a: _is(kind) for a, kind in _EXACT.items()},
    **{a: _is_list_of(kind) for a, kind in _ELEMENT.items()},
    **{a: _is_optional(kind) for a, kind in _OPTIONAL.items()},
}
_CHECKED: dict[type, tuple[tuple[int, str, Callable[[Any], bool]], ...]] = {
    cls: tuple(
        (i, f.name, _CHECKS[str(f.type)]) for i, f in enumerate(dataclasses.fields(cls)) if str(f.type) in _CHECKS
    )
    for cls in _REGISTRY.values()
}


@dataclasses.dataclass(frozen=True)
class _Shape:
    """``_CHECKED`` of one record class, grouped so that a record that passes costs little to check."""

    exact: Callable[[list[Any]], tuple[Any, ...]] | None
    """The str, int and bool fields of an encoded record (after the class name), in order."""
    types: tuple[type, ...]
    """Their exact types."""
    lists: tuple[tuple[int, frozenset[type]], ...]
    """Fields that are lists of str or of int, with that type (as a set)."""
    optional: tuple[tuple[int, type], ...]

    def holds(self, data: list[Any]) -> bool:
        if self.exact is not None and tuple(map(type, self.exact(data))) != self.types:
            return False
        for i, kinds in self.lists:
            v = data[i]
            if type(v) is not list or (v and not {*map(type, v)} <= kinds):
                return False
        for i, kind in self.optional:
            v = data[i]
            if v is not None and type(v) is not kind:
                return False
        return True


def _shape(cls: type) -> _Shape:
    fields = [(i + 1, str(f.type)) for i, f in enumerate(dataclasses.fields(cls))]
    exact = [(i, _EXACT[a]) for i, a in fields if a in _EXACT]
    get = operator.itemgetter(*(i for i, _ in exact)) if exact else None
    return _Shape(
        (get if len(exact) > 1 else lambda data: (get(data),)) if get is not None else None,  # type: ignore[misc]
        tuple(t for _, t in exact),
        tuple((i, frozenset({_ELEMENT[a]})) for i, a in fields if a in _ELEMENT),
        tuple((i, _OPTIONAL[a]) for i, a in fields if a in _OPTIONAL),
    )


_SHAPES = {cls: _shape(cls) for cls in _REGISTRY.values()}


def _getter(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    get = operator.attrgetter(*names)
    return get if len(names) > 1 else lambda obj: (get(obj),)


# All fields of a record in one call (a tuple, in field order).
_VALUES: dict[type, Callable[[Any], tuple[Any, ...]]] = {cls: _getter(names) for cls, names in _FIELDS.items()}
# Positions (in the encoded list, after the class name) of the fields that may hold more
# than JSON itself writes: fields annotated as str, int, bool or lists of str or int go
# as they are (the parent checks those annotations on arrival).
_NESTED: dict[type, tuple[int, ...]] = {
    cls: tuple(i + 1 for i, f in enumerate(dataclasses.fields(cls)) if str(f.type) not in _CHECKS)
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


def _object(data: dict[str, Any]) -> Any:
    """One JSON object, its contents decoded already: a record or a special container, or itself.

    ``loads`` gives it to ``json.loads`` as the ``object_hook``, so the C parser builds
    every list and scalar and Python sees each object once, innermost first.
    """
    if len(data) != 1:
        return data
    ((key, value),) = data.items()
    if key == _REC:
        return _record(value)
    if key == "__tuple":
        return tuple(value)
    if key == _FLOAT:
        if type(value) is not str or value not in _NON_FINITE:
            raise WireError("__float is one of nan, inf, -inf")
        return _NON_FINITE[value]
    if key == "__frozenset":
        return frozenset(_keys(value))
    if key == "__set":
        return set(_keys(value))
    if key == "__items":
        if not all(type(pair) is list and len(pair) == 2 for pair in value):
            raise WireError("__items holds [key, value] pairs")
        return dict(zip(_keys([k for k, _ in value]), [v for _, v in value]))
    return data


def _record(data: Any) -> Any:
    """The record ``[class name, field values...]`` describes (the values decoded already)."""
    if not isinstance(data, list) or not data:
        raise WireError("a record on the wire is a list [class, fields...]")
    name = data[0]
    cls = _REGISTRY.get(name) if isinstance(name, str) else None
    if cls is None:
        raise WireError(f"unknown record class {name!r}")
    fields = _FIELDS[cls]
    if len(data) != len(fields) + 1:
        raise WireError(f"{name} has {len(fields)} fields, not {len(data) - 1}")
    if not _SHAPES[cls].holds(data):
        for i, field_name, check in _CHECKED[cls]:  # which field, for the message
            if not check(data[i + 1]):
                raise WireError(f"{name}.{field_name} can't be {type(data[i + 1]).__name__} {data[i + 1]!r:.40}")
    # What the generated __init__ does for a frozen record with every field given (no
    # __post_init__: checked at import), without its object.__setattr__ call per field.
    obj: Any = object.__new__(cls)
    obj.__dict__.update(zip(fields, data[1:]))
    return obj


_DECODER = json.JSONDecoder(object_hook=_object)

_HASH_MODULUS = 2**61 - 1
"""Python hashes an int modulo this: ints apart by a multiple of it collide."""


def _keys(items: Any) -> Any:
    """``items`` if each can be a set member or dict key from the wire, else WireError.

    Only strings (their hashes are salted), None, bools and ints, and ints may not collide
    more than by chance: a worker that sent thousands of ints apart by multiples of the hash
    modulus would make building the set take quadratic time in the parent.
    """
    if type(items) is not list:
        raise WireError("set members and keys come as a list")
    ints = 0
    for x in items:
        t = type(x)
        if t is int:
            ints += 1
        elif not (t is str or x is None or t is bool):
            raise WireError(f"a set member or key on the wire can't be a {t.__name__}")
    if ints > 64 and ints - len({x % _HASH_MODULUS for x in items if type(x) is int}) > 8:
        raise WireError("set members or keys whose hashes collide")
    return items


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


def loads(line: str | bytes) -> Any:
    """The value of one line of JSON made from ``encode``'s data (a ``dumps`` line, or a frame).

    ``json.loads`` with an ``object_hook`` builds a new decoder per call; the parent decodes
    a frame per step, so one decoder serves them all. Bytes are read as ``json.loads`` reads
    them (a frame starts ``{"``, which it reads as UTF-8).
    """
    if isinstance(line, (bytes, bytearray)):
        line = line.decode("utf-8" if line[:2] == b'{"' else json.detect_encoding(line), "surrogatepass")
    return _DECODER.decode(line)


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
    """Encodes (worker) or decodes (parent) one run's steps in order.

    Both ends remember the last tensor record that went under each name; a record equal
    to it travels as ``{"__same": 1}`` and is decoded to that same record object.
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

    def resolve(self, step: Any) -> records.Step:
        """The step ``loads`` decoded, with each reference replaced by the record it names."""
        if not isinstance(step, records.Step) or not isinstance(step.tensors, dict):
            raise WireError("expected a step")
        if not _is_counts(step.unlisted):
            raise WireError("a step's unlisted items are counts by name")
        if not step.observed and (step.tensors or step.arrays):
            raise WireError("a step not observed has no records")
        last = self._last
        tensors: dict[str, Any] = step.tensors
        for name, rec in tensors.items():
            if type(rec) is dict and rec == {_SAME: 1}:
                if name not in last:
                    raise WireError(f"a reference to {name!r}, which was never sent")
                tensors[name] = last[name]
            elif isinstance(rec, records.TensorRecord):
                last[name] = rec
            else:
                raise WireError(f"{name!r} is not a tensor record")
        return step


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


__all__ = ["Position", "RunningStack", "StepCodec", "WireError", "dumps", "encode", "loads", "registry"]
