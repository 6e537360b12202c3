"""The parent's one strict decoder for the worker's frames.

The worker runs the script, and from the engine's rewrite on a script is real Python there:
it can write any bytes on the frame pipe. So every line the parent reads goes through
``FrameDecoder.decode``, which returns a ``Frame`` only when the line is, exactly, a frame
the worker's ``Channel`` writes, and raises ``WireError`` otherwise (what was wrong, in a
few words). Nothing else reads the pipe.

What is checked, in this order:

- size: at most ``MAX_FRAME_BYTES`` bytes, and at most ``MAX_CONTAINERS`` lists and objects
  (a line of ``[[],[],…]`` would take twenty times its size in memory);
- JSON: parsed by orjson (already the worker's encoder: strict, in C, no NaN or Infinity,
  valid UTF-8 only, nesting at most 1,024 levels, an integer past 64 bits read as a float,
  a number that overflows a double refused). A line orjson refuses is read again by the
  standard parser only where it holds a ``\\uD8xx``–``\\uDFxx`` escape (the worker's
  standard encoder writes a lone surrogate so), with the same rules (nesting bounded by the
  recursion limit);
- schema: each frame kind has exactly its fields; each record (every dataclass of
  ``records``) is ``{"__r": [class, field values...]}`` with one value per field, each of the
  type its annotation names (a bool is not an int, a float is not an int, None only where
  the annotation allows it), built from the annotations, so a field added to a record is
  checked without changes here; ``Any`` fields (tensor values, an operation's detail) hold
  plain data (None, bools, ints, finite floats, strings, lists, objects with string keys and
  the worker's tags for tuples, sets, non-finite floats and other keys), at most
  ``MAX_VALUE_DEPTH`` deep;
- a step's own facts: consecutive indexes are the caller's (``supervise``); here, its status
  agrees with its error, its unlisted counts are counts, a step not observed carries no
  records, and a tensor sent as unchanged names one that was sent.

Decoding costs about what the former object-hook decoder did (benchmarks/wire_probe.py).
Nothing here imports torch.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import types
import typing
from collections.abc import Callable
from typing import Any, NamedTuple

import orjson

from tcopy_cli.trace import records
from tcopy_cli.trace.wire import WireError, registry

MAX_FRAME_BYTES = 64 * 1024**2
"""The longest frame the parent reads (a step of 5,000 tensors with 100 values each is ~15 MB)."""
MAX_CONTAINERS = 2_000_000
"""Lists and objects in one frame (counted as the ``[`` and ``{`` bytes that can open one)."""
MAX_VALUE_DEPTH = 256
"""Nesting of the plain data in an ``Any`` field (a tensor's values nest one level per dimension)."""
INT_MIN, INT_MAX = -(2**63), 2**64 - 1
"""What an int on the wire may be: what orjson reads as an int (a Python int past it is a float there)."""

_REC, _SAME = "__r", "__same"
_NON_FINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
_TAGS = frozenset({"__tuple", "__frozenset", "__set", "__items", "__float", _REC, _SAME})
_SCALARS = frozenset({str, int, float, bool, type(None)})
_HASH_MODULUS = 2**61 - 1
"""Python hashes an int modulo this: ints apart by a multiple of it collide."""

Decoder = Callable[[Any], Any]


class Frame(NamedTuple):
    """One decoded frame: its kind, its fields (records built), and whether its text is plain."""

    kind: str
    data: dict[str, Any]
    plain: bool
    """No string in it (nor in a tensor record it refers to) holds a character ``printable``
    would escape: the views can show it as it is."""


def _show(value: Any) -> str:
    """A value, short, for a message (the message is escaped where it is printed)."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _kind_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


# --- JSON -----------------------------------------------------------------------------


def _int64(text: str) -> int | float:
    """An int as orjson reads it: within 64 bits an int, past them a float, past a double refused."""
    if len(text) <= 21 and INT_MIN <= (n := int(text)) <= INT_MAX:
        return n
    return _finite(text)


def _finite(text: str) -> float:
    x = float(text)
    if not math.isfinite(x):
        raise WireError("a number out of range")
    return x


def _constant(name: str) -> Any:
    raise WireError(f"{name} is not JSON")


_FALLBACK = json.JSONDecoder(parse_int=_int64, parse_float=_finite, parse_constant=_constant)
_IN_TEXT = re.compile(rb"(?<=[\w\])\"'])[\[{]")
"""A bracket right after a letter, digit, bracket or quote: in JSON only inside a string."""
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def parse(line: bytes) -> Any:
    """The JSON value of one frame line, within the size and depth bounds; WireError otherwise."""
    if len(line) > MAX_FRAME_BYTES:
        raise WireError(f"a frame of {len(line):,} bytes (at most {MAX_FRAME_BYTES:,})")
    containers = line.count(b"[") + line.count(b"{")
    if containers > MAX_CONTAINERS:  # the brackets of names (xs[0], d["k"]) and previews are no lists
        containers -= _IN_TEXT.subn(b"", line)[1]
        if containers > MAX_CONTAINERS:
            raise WireError(f"a frame of more than {MAX_CONTAINERS:,} lists and objects")
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        if _SURROGATE_ESCAPE.search(line) is None:
            raise WireError(f"not JSON ({str(exc).split(':')[0]})") from None
    try:
        return _FALLBACK.decode(line.decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # WireError is a ValueError
        raise WireError(str(exc) if isinstance(exc, WireError) else f"not JSON ({type(exc).__name__})") from None


# --- plain data (``Any`` fields, a hook's result) ---------------------------------------


def _keys(items: Any) -> list[Any]:
    """``items`` if each can be a set member or dict key from the wire, else WireError.

    Only strings (their hashes are salted), None, bools and ints, and ints may not collide
    more than by chance: thousands of ints apart by multiples of the hash modulus would make
    building the set take quadratic time.
    """
    if type(items) is not list:
        raise WireError("set members and keys come as a list")
    ints = 0
    for x in items:
        t = type(x)
        if t is int:
            ints += 1
        elif not (t is str or x is None or t is bool):
            raise WireError(f"a set member or key can't be a {_kind_name(x)}")
    if ints > 64 and ints - len({x % _HASH_MODULUS for x in items if type(x) is int}) > 8:
        raise WireError("set members or keys whose hashes collide")
    return items


def plain(value: Any, depth: int = 0) -> Any:
    """Plain data from the wire: scalars, lists, objects with string keys, and the worker's tags
    (``{"__tuple": [...]}``, ``__frozenset``, ``__set``, ``__items`` for other keys, ``__float``
    for a non-finite float); no record, at most ``MAX_VALUE_DEPTH`` deep."""
    t = type(value)
    if t in _SCALARS:
        return value
    if depth >= MAX_VALUE_DEPTH:
        raise WireError(f"plain data nested more than {MAX_VALUE_DEPTH} levels")
    if t is list:
        if {*map(type, value)} <= _SCALARS:
            return value
        return [plain(x, depth + 1) for x in value]
    # An object: the parsers make nothing but lists, objects and scalars.
    if len(value) == 1:
        ((key, inner),) = value.items()
        if key in _TAGS:
            return _tagged(key, inner, depth)
    elif not _TAGS.isdisjoint(value):
        raise WireError("a tag among other keys")
    return {k: plain(x, depth + 1) for k, x in value.items()}


def _tagged(key: str, inner: Any, depth: int) -> Any:
    if key == "__float":
        if type(inner) is not str or inner not in _NON_FINITE:
            raise WireError("__float is one of nan, inf, -inf")
        return _NON_FINITE[inner]
    if key in (_REC, _SAME):
        raise WireError(f"a record ({key}) where plain data belongs")
    if type(inner) is not list:
        raise WireError(f"{key} holds a list")
    if key == "__tuple":
        return tuple(plain(x, depth + 1) for x in inner)
    if key == "__frozenset":
        return frozenset(_keys(inner))
    if key == "__set":
        return set(_keys(inner))
    if not all(type(pair) is list and len(pair) == 2 for pair in inner):  # __items
        raise WireError("__items holds [key, value] pairs")
    return dict(zip(_keys([k for k, _ in inner]), [plain(v, depth + 1) for _, v in inner]))


# --- records, from their annotations ---------------------------------------------------

_EXACT: dict[Any, type] = {str: str, int: int, bool: bool}
_HINTS: dict[type, dict[str, Any]] = {}
_RECORDS: dict[str, type] = registry()
_DECODERS: dict[Any, Decoder] = {}


def _hints(cls: type) -> dict[str, Any]:
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = typing.get_type_hints(cls, vars(records))
    return hints


def _exact(kind: type) -> Decoder:
    what = kind.__name__

    def decode(v: Any) -> Any:
        if type(v) is not kind:
            raise WireError(f"expected {what}, not {_kind_name(v)} {_show(v)}")
        return v

    return decode


def _optional(inner: Decoder) -> Decoder:
    return lambda v: None if v is None else inner(v)


def _list_of(kind: Any) -> Decoder:
    if kind in _EXACT or kind is float:
        allowed = frozenset({kind})

        def simple(v: Any) -> Any:
            if type(v) is not list or (v and not {*map(type, v)} <= allowed):
                raise WireError(f"expected a list of {kind.__name__}, not {_show(v)}")
            return v

        return simple
    item = decoder(kind)

    def items(v: Any) -> Any:
        if type(v) is not list:
            raise WireError(f"expected a list, not {_kind_name(v)}")
        return [item(x) for x in v]

    return items


def _tuple_of(kind: Any) -> Decoder:
    items = _list_of(kind)

    def decode(v: Any) -> Any:
        if type(v) is not dict or len(v) != 1 or "__tuple" not in v:
            raise WireError(f"expected a tuple, not {_show(v)}")
        return tuple(items(v["__tuple"]))

    return decode


def _dict_of(value_kind: Any) -> Decoder:
    value = decoder(value_kind)

    def decode(v: Any) -> Any:
        if type(v) is not dict:
            raise WireError(f"expected an object, not {_kind_name(v)}")
        if len(v) == 1 and "__items" in v:  # string keys that look like tags (a name __r)
            pairs = v["__items"]
            if type(pairs) is not list or not all(type(p) is list and len(p) == 2 and type(p[0]) is str for p in pairs):
                raise WireError("__items holds [name, value] pairs")
            return {k: value(x) for k, x in pairs}
        if not _TAGS.isdisjoint(v):
            raise WireError("a tag among names")
        return {k: value(x) for k, x in v.items()}

    return decode


def _frozenset_of_int(v: Any) -> Any:
    if type(v) is not dict or len(v) != 1 or "__frozenset" not in v:
        raise WireError(f"expected a set, not {_show(v)}")
    members = _keys(v["__frozenset"])
    if not all(type(x) is int for x in members):
        raise WireError("expected a set of int")
    return frozenset(members)


def _literal(choices: tuple[Any, ...]) -> Decoder:
    allowed = frozenset(choices)

    def decode(v: Any) -> Any:
        if type(v) is not str or v not in allowed:
            raise WireError(f"expected one of {', '.join(map(str, choices))}, not {_show(v)}")
        return v

    return decode


def decoder(tp: Any) -> Decoder:
    """The decoder of a value annotated ``tp`` (compiled once per annotation)."""
    found = _DECODERS.get(tp)
    if found is None:
        found = _DECODERS[tp] = _compile(tp)
    return found


def _compile(tp: Any) -> Decoder:
    if tp is Any:
        return plain
    if tp in _EXACT:
        return _exact(tp)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (types.UnionType, typing.Union) and len(args) == 2 and type(None) in args:
        return _optional(decoder(next(a for a in args if a is not type(None))))
    if origin is list:
        return _list_of(args[0])
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return _tuple_of(args[0])
    if origin is dict and args[0] is str:
        return _dict_of(args[1])
    if origin is frozenset and args == (int,):
        return _frozenset_of_int
    if origin is typing.Literal:
        return _literal(args)
    raise TypeError(f"no wire decoder for {tp!r}")  # a record field of a new kind: teach it here


_SIMPLE_OPTIONAL = {str | None: str, int | None: int}
_SIMPLE_LISTS = {list[str]: str, list[int]: int}


def _inner(tp: Any) -> tuple[Any, bool]:
    """``(T, True)`` for ``T | None``, else ``(tp, False)``."""
    args = typing.get_args(tp)
    if typing.get_origin(tp) in (types.UnionType, typing.Union) and len(args) == 2 and type(None) in args:
        return next(a for a in args if a is not type(None)), True
    return tp, False


def _record_source(cls: type) -> str:
    """The source of ``R_<class>``, the decoder of one record class, in straight-line code.

    ``{"__r": [name, field values...]}`` to the record: the str, int and bool fields (optional
    ones too) and lists of str or int are checked in one condition; nested records, lists and
    tuples of them are decoded in place; any other field by the decoder of its annotation
    (``D_<class>_<field>``). Generated once per class, as records.py makes each ``__init__``:
    the parent decodes every step, and a loop over the fields took twice as long.
    """
    name = cls.__name__
    hints = _hints(cls)
    fields = [f.name for f in dataclasses.fields(cls)]
    values = [f"f{i}" for i in range(len(fields))]
    checks: list[str] = []
    decode: list[str] = []
    for i, field in enumerate(fields):
        v, tp = values[i], hints[field]
        inner, optional = _inner(tp)
        origin, args = typing.get_origin(inner), typing.get_args(inner)
        item = args[0].__name__ if args and isinstance(args[0], type) and args[0].__name__ in _RECORDS else None
        if tp in _EXACT:
            checks.append(f"type({v}) is {tp.__name__}")
            continue
        if tp in _SIMPLE_OPTIONAL:
            checks.append(f"({v} is None or type({v}) is {_SIMPLE_OPTIONAL[tp].__name__})")
            continue
        if tp in _SIMPLE_LISTS:
            kind = _SIMPLE_LISTS[tp].__name__
            checks.append(f"type({v}) is list and (not {v} or {{*map(type, {v})}} <= ONLY_{kind})")
            continue
        decode.append(f"at = {i}")
        if isinstance(inner, type) and inner.__name__ in _RECORDS:
            call = f"{v} = R_{inner.__name__}({v})"
            decode.append(f"if {v} is not None: {call}" if optional else call)
        elif origin is list and item is not None and not optional:
            decode.append(f"if type({v}) is not list: raise WireError('expected a list')")
            decode.append(f"{v} = [R_{item}(x) for x in {v}]")
        elif origin is tuple and item is not None and not optional:
            decode.append(f"t = {v}.get('__tuple') if type({v}) is dict and len({v}) == 1 else None")
            decode.append("if type(t) is not list: raise WireError('expected a tuple')")
            decode.append(f"{v} = tuple([R_{item}(x) for x in t])")
        else:
            call = f"{v} = D_{name}_{field}({v})"
            decode.append(f"if {v} is not None: {call}" if optional else call)
    body = [
        f"def R_{name}(v):",
        "    data = v.get('__r') if type(v) is dict and len(v) == 1 else None",
        f"    if type(data) is not list or len(data) != {len(fields) + 1} or data[0] != {name!r}:",
        f"        _not_a_record(INFO_{name}, v)",
        f"    _, {', '.join(values)}{',' if len(values) == 1 else ''} = data",
    ]
    if checks:
        body += [f"    if not ({' and '.join(checks)}):", f"        _which(INFO_{name}, data)"]
    if decode:
        body.append("    try:")
        body += [f"        {line}" for line in decode]
        body += ["    except WireError as exc:", f"        _in_field(INFO_{name}, at, exc)"]
    body += [
        f"    obj = new({name})",
        f"    obj.__dict__.update({', '.join(f'{f}={v}' for f, v in zip(fields, values))})",
        "    return obj",
    ]
    return "\n".join(body) + "\n"


class _Info(NamedTuple):
    """What a record's decoder says in its messages."""

    name: str
    fields: tuple[str, ...]
    hints: tuple[Any, ...]


def _not_a_record(info: _Info, v: Any) -> None:
    data = v.get(_REC) if type(v) is dict else None
    if type(data) is list and data and data[0] == info.name:
        raise WireError(f"{info.name} has {len(info.fields)} fields, not {len(data) - 1}")
    raise WireError(f"expected a {info.name} record, not {_show(v)}")


def _which(info: _Info, data: list[Any]) -> None:
    """Raise for the first field of those checked in one condition that does not hold its type."""
    for i, tp in enumerate(info.hints):
        if tp in _EXACT or tp in _SIMPLE_OPTIONAL or tp in _SIMPLE_LISTS:
            v = data[i + 1]
            try:
                decoder(tp)(v)
            except WireError:
                raise WireError(f"{info.name}.{info.fields[i]} can't be {_kind_name(v)} {_show(v)}") from None
    raise AssertionError("a field failed its check, but none alone")  # pragma: no cover


def _in_field(info: _Info, at: int, exc: WireError) -> None:
    raise WireError(f"{info.name}.{info.fields[at]}: {exc}") from None


def _generate() -> None:
    """``R_<class>`` for every record class, and the decoders of their other fields."""
    env: dict[str, Any] = {
        "WireError": WireError,
        "new": object.__new__,
        "ONLY_str": frozenset({str}),
        "ONLY_int": frozenset({int}),
        "_not_a_record": _not_a_record,
        "_which": _which,
        "_in_field": _in_field,
    }
    for name, cls in _RECORDS.items():
        hints = _hints(cls)
        fields = tuple(f.name for f in dataclasses.fields(cls))
        env[name] = cls
        env[f"INFO_{name}"] = _Info(name, fields, tuple(hints[f] for f in fields))
        exec(_record_source(cls), env)  # tcopy's own code, made from the annotations above
        _DECODERS[cls] = env[f"R_{name}"]
    for name, cls in _RECORDS.items():  # after every R_: these may decode records too
        hints = _hints(cls)
        for field in (f.name for f in dataclasses.fields(cls)):
            if f"D_{name}_{field}" in _record_source(cls):
                env[f"D_{name}_{field}"] = decoder(_inner(hints[field])[0])


_generate()


def decode_fields(cls: type, value: Any) -> dict[str, Any]:
    """``value`` as the fields of dataclass ``cls`` (an object with exactly its field names, each
    of its annotated type), for plain data that becomes one (``tcopy compare``'s rows)."""
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    if type(value) is not dict or value.keys() != set(names):
        raise WireError(f"expected the fields of {cls.__name__}, not {_show(value)}")
    out = {}
    for name in names:
        try:
            out[name] = decode_as(hints[name], value[name])
        except WireError as exc:
            raise WireError(f"{cls.__name__}.{name}: {exc}") from None
    return out


def decode_as(tp: Any, value: Any) -> Any:
    """``value`` (parsed JSON) decoded as an annotation ``tp`` says; WireError if it isn't one."""
    try:
        return decoder(tp)(value)
    except RecursionError:
        raise WireError("records nested too deeply") from None


# --- frames ----------------------------------------------------------------------------

_POSITION = {"line": int, "col": int, "end_line": int, "end_col": int}
_SCHEMA: dict[str, dict[str, Any]] = {
    "start": {"info": records.RunInfo},
    "running": _POSITION,
    "step": {"step": records.Step},
    "end": {"summary": records.RunSummary},
    "experiment": {"expression": str, "run": str},
    "compare": {"rows": list[dict[str, Any]]},
    "done": {"errors": int},
    "refused": {"line": int | None, "column": int | None, "message": str},
    "rejected": {"info": records.RunInfo, "line": int | None, "column": int | None, "message": str},
    "usage_error": {"message": str},
    "run_error": {"message": str},
    "internal_error": {"type": str, "message": str},
    "hook": {"result": Any},
}
"""Every frame kind the worker sends and the type of each of its fields (worker.py describes them)."""
KINDS = frozenset(_SCHEMA)
_FIELDS = {kind: frozenset(fields) | {"kind"} for kind, fields in _SCHEMA.items()}
_STEP_TENSORS = [f.name for f in dataclasses.fields(records.Step)].index("tensors") + 1
_REFERENCE = {_SAME: 1}
_NOT_PLAIN = re.compile(
    rb"\\[ubfr]"  # an escape: \uXXXX (orjson writes one only for a control character), \b, \f, \r
    rb"|[\x00-\x08\x0b-\x1f\x7f]"  # raw C0 (not JSON anyway) and DEL
    rb"|\xc2[\x80-\x9f]"  # C1 (0x9b is CSI)
    rb"|\xd8\x9c|\xe2\x80[\x8e\x8f\xa8-\xae]|\xe2\x81[\xa6-\xa9]"  # bidi controls, line/paragraph separators
    rb"|\xed[\xa0-\xbf]"  # a surrogate
)
"""Bytes of a frame that may stand for a character ``printable`` escapes (tests/trace/test_frames.py
checks that every string it changes is found here, however a worker writes it)."""
_PRINTABLE_ASCII = bytes(range(0x20, 0x7F)) + b"\t\n"
_ESCAPE = re.compile(rb"\\[ubfr]")


def _plain_text(line: bytes) -> bool:
    """Whether no string in the JSON ``line`` can hold a character ``printable`` escapes.

    ``_NOT_PLAIN`` alone takes a few times as long as parsing the line: an ASCII line (most
    frames) is checked for control bytes by ``translate`` and for escapes only where it has a
    backslash, both in C.
    """
    if not line.isascii():
        return _NOT_PLAIN.search(line) is None
    if line.translate(None, _PRINTABLE_ASCII):
        return False
    return b"\\" not in line or _ESCAPE.search(line) is None


def _check_graph(graph: records.GraphRecord) -> None:
    """A graph's roots and edges name its nodes (the views follow them)."""
    nodes = graph.nodes
    if not all(root in nodes for root in graph.roots.values()):
        raise WireError("Step.graph: a root that is not a node")
    if not all(n is None or n in nodes for node in nodes.values() for n in node.next):
        raise WireError("Step.graph: an edge to a node that is not there")


def _check_ops(step: records.Step) -> None:
    """The indexes in a step's operation record point where they may (the notes follow them)."""
    ops = step.ops
    for k, op in enumerate(ops):
        inputs = len(op.inputs)
        if op.index != k or not all(0 <= b < inputs for b in op.bumped):
            raise WireError(f"Step.ops[{k}]: an index out of place")
        if not all(i.from_op is None or 0 <= i.from_op < k for i in op.inputs):
            raise WireError(f"Step.ops[{k}]: an input from an operation that did not run before it")
        for result in op.results:
            for r in result.relations:
                size = inputs if r.op is None else (len(ops[r.op].inputs) if 0 <= r.op < k else -1)
                if not 0 <= r.input < size:
                    raise WireError(f"Step.ops[{k}]: a relation to an input that is not there")
    if not all(n.op is None or 0 <= n.op < len(ops) for n in step.explanations):
        raise WireError("Step.explanations: a note about an operation that is not there")


class FrameDecoder:
    """Decodes one worker's frames in order (a step's unchanged tensors refer to earlier ones)."""

    def __init__(self) -> None:
        self._last: dict[str, records.TensorRecord] = {}
        self._unplain: set[str] = set()
        """Names whose last tensor record came in a frame that was not plain."""

    def decode(self, line: bytes) -> Frame:
        frame = parse(line)
        if type(frame) is not dict:
            raise WireError(f"a frame is an object, not {_kind_name(frame)}")
        kind = frame.get("kind")
        if type(kind) is not str or kind not in _FIELDS:
            raise WireError(f"unknown frame kind {_show(kind)}")
        fields = _FIELDS[kind]
        if frame.keys() != fields:
            missing, extra = sorted(fields - frame.keys()), sorted(frame.keys() - fields)
            raise WireError(f"a {kind} frame" + (f" without {', '.join(missing)}" if missing else "") + (
                f" with {', '.join(map(_show, extra))}" if extra else ""
            ))  # fmt: skip
        plain_text = _plain_text(line)
        if kind == "running":
            if not all(type(frame[k]) is int and 0 <= frame[k] <= INT_MAX for k in _POSITION):
                raise WireError("a running frame's position is four counts")
            return Frame(kind, frame, plain_text)
        if kind == "step":
            step, plain_refs = self._step(frame["step"], plain_text)
            frame["step"] = step
            return Frame(kind, frame, plain_text and plain_refs)
        for name, tp in _SCHEMA[kind].items():
            try:
                frame[name] = decode_as(tp, frame[name])
            except WireError as exc:
                raise WireError(f"{kind}.{name}: {exc}") from None
        return Frame(kind, frame, plain_text)

    def _step(self, data: Any, plain_text: bool) -> tuple[records.Step, bool]:
        """The step, its unchanged tensors resolved; and whether those were all sent in plain frames."""
        raw: list[Any] = data[_REC] if type(data) is dict and len(data) == 1 and type(data.get(_REC)) is list else []
        tensors = raw[_STEP_TENSORS] if len(raw) > _STEP_TENSORS else None
        refs: list[str] = []
        if type(tensors) is dict:  # references out first: the field's decoder reads records only
            if len(tensors) == 1 and type(pairs := tensors.get("__items")) is list:  # a name like __r
                if not all(type(p) is list and len(p) == 2 and type(p[0]) is str for p in pairs):
                    raise WireError("Step.tensors: __items holds [name, value] pairs")
                tensors = dict(pairs)
            refs = [name for name, rec in tensors.items() if type(rec) is dict and rec == _REFERENCE]
            sent = {k: v for k, v in tensors.items() if type(v) is not dict or v != _REFERENCE} if refs else tensors
            raw[_STEP_TENSORS] = {"__items": [[k, v] for k, v in sent.items()]} if not _TAGS.isdisjoint(sent) else sent
        step: records.Step = decode_as(records.Step, data)
        if step.status != ("ok" if step.error is None else "error"):
            raise WireError(f"a step of status {_show(step.status)} with error {_show(step.error)}")
        if not all(n > 0 for n in step.unlisted.values()):
            raise WireError("a step's unlisted items are counts by name")
        if not step.observed and (step.tensors or step.arrays or refs):
            raise WireError("a step not observed has no records")
        if step.graph is not None:
            _check_graph(step.graph)
        if step.ops or step.explanations:
            _check_ops(step)
        last, unplain = self._last, self._unplain
        for name, rec in step.tensors.items():
            last[name] = rec
            if plain_text:
                unplain.discard(name)
            else:
                unplain.add(name)
        if refs:
            for name in refs:
                if name not in last:
                    raise WireError(f"a reference to {_show(name)}, which was never sent")
            # In the order they were sent (the worker's dict order): references come back in place.
            resolved = {name: step.tensors.get(name) or last[name] for name in tensors}  # type: ignore[union-attr]
            step.__dict__["tensors"] = resolved
        return step, not any(name in unplain for name in refs)


__all__ = [
    "KINDS",
    "MAX_FRAME_BYTES",
    "Frame",
    "FrameDecoder",
    "WireError",
    "decode_as",
    "decode_fields",
    "parse",
    "plain",
]
