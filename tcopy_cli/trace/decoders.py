"""Values from the wire checked against the records' annotations, and built.

A frame's fields are parsed JSON; ``decode_as`` makes each the value its annotation names, or
raises ``WireError`` (what was wrong, in a few words). Each record (every dataclass of
``records``) is ``{"__r": [class, field values...]}`` with one value per field, each of the type
its annotation names (a bool is not an int, a float is not an int, None only where the
annotation allows it), built from the annotations, so a field added to a record is checked
without changes here; ``Any`` fields (tensor values, an operation's detail) hold plain data
(None, bools, ints, finite floats, strings, lists, objects with string keys and the worker's
tags for tuples, sets, non-finite floats and other keys), at most ``MAX_VALUE_DEPTH`` deep.

Nothing here imports torch.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Callable
from typing import Any, NamedTuple

from tcopy_cli.trace import records
from tcopy_cli.trace.wire import WireError, registry

MAX_VALUE_DEPTH = 256
"""Nesting of the plain data in an ``Any`` field (a tensor's values nest one level per dimension)."""

REC, SAME = "__r", "__same"
"""The tags of a record and of a tensor record sent as unchanged."""
_NON_FINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
TAGS = frozenset({"__tuple", "__frozenset", "__set", "__items", "__float", REC, SAME})
_SCALARS = frozenset({str, int, float, bool, type(None)})
_HASH_MODULUS = 2**61 - 1
"""Python hashes an int modulo this: ints apart by a multiple of it collide."""

Decoder = Callable[[Any], Any]


def show(value: Any) -> str:
    """A value, short, for a message (the message is escaped where it is printed)."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def kind_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


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
            raise WireError(f"a set member or key can't be a {kind_name(x)}")
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
        if key in TAGS:
            return _tagged(key, inner, depth)
    elif not TAGS.isdisjoint(value):
        raise WireError("a tag among other keys")
    return {k: plain(x, depth + 1) for k, x in value.items()}


def _tagged(key: str, inner: Any, depth: int) -> Any:
    if key == "__float":
        if type(inner) is not str or inner not in _NON_FINITE:
            raise WireError("__float is one of nan, inf, -inf")
        return _NON_FINITE[inner]
    if key in (REC, SAME):
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
            raise WireError(f"expected {what}, not {kind_name(v)} {show(v)}")
        return v

    return decode


def _optional(inner: Decoder) -> Decoder:
    return lambda v: None if v is None else inner(v)


def _list_of(kind: Any) -> Decoder:
    if kind in _EXACT or kind is float:
        allowed = frozenset({kind})

        def simple(v: Any) -> Any:
            if type(v) is not list or (v and not {*map(type, v)} <= allowed):
                raise WireError(f"expected a list of {kind.__name__}, not {show(v)}")
            return v

        return simple
    item = decoder(kind)

    def items(v: Any) -> Any:
        if type(v) is not list:
            raise WireError(f"expected a list, not {kind_name(v)}")
        return [item(x) for x in v]

    return items


def _tuple_of(kind: Any) -> Decoder:
    items = _list_of(kind)

    def decode(v: Any) -> Any:
        if type(v) is not dict or len(v) != 1 or "__tuple" not in v:
            raise WireError(f"expected a tuple, not {show(v)}")
        return tuple(items(v["__tuple"]))

    return decode


def _dict_of(value_kind: Any) -> Decoder:
    value = decoder(value_kind)

    def decode(v: Any) -> Any:
        if type(v) is not dict:
            raise WireError(f"expected an object, not {kind_name(v)}")
        if len(v) == 1 and "__items" in v:  # string keys that look like tags (a name __r)
            pairs = v["__items"]
            if not named_pairs(pairs):
                raise WireError("__items holds [name, value] pairs")
            return {k: value(x) for k, x in pairs}
        if not TAGS.isdisjoint(v):
            raise WireError("a tag among names")
        return {k: value(x) for k, x in v.items()}

    return decode


def named_pairs(v: Any) -> bool:
    """Whether ``v`` is a list of ``[name, value]`` pairs (``__items``: names that look like tags)."""
    return type(v) is list and all(type(p) is list and len(p) == 2 and type(p[0]) is str for p in v)


def _frozenset_of_int(v: Any) -> Any:
    if type(v) is not dict or len(v) != 1 or "__frozenset" not in v:
        raise WireError(f"expected a set, not {show(v)}")
    members = _keys(v["__frozenset"])
    if not all(type(x) is int for x in members):
        raise WireError("expected a set of int")
    return frozenset(members)


def _literal(choices: tuple[Any, ...]) -> Decoder:
    allowed = frozenset(choices)

    def decode(v: Any) -> Any:
        if type(v) is not str or v not in allowed:
            raise WireError(f"expected one of {', '.join(map(str, choices))}, not {show(v)}")
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
    inner, optional = _inner(tp)
    if optional:
        return _optional(decoder(inner))
    origin, args = typing.get_origin(tp), typing.get_args(tp)
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
    data = v.get(REC) if type(v) is dict else None
    if type(data) is list and data and data[0] == info.name:
        raise WireError(f"{info.name} has {len(info.fields)} fields, not {len(data) - 1}")
    raise WireError(f"expected a {info.name} record, not {show(v)}")


def _which(info: _Info, data: list[Any]) -> None:
    """Raise for the first field of those checked in one condition that does not hold its type."""
    for i, tp in enumerate(info.hints):
        if tp in _EXACT or tp in _SIMPLE_OPTIONAL or tp in _SIMPLE_LISTS:
            v = data[i + 1]
            try:
                decoder(tp)(v)
            except WireError:
                raise WireError(f"{info.name}.{info.fields[i]} can't be {kind_name(v)} {show(v)}") from None
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
    sources = {name: _record_source(cls) for name, cls in _RECORDS.items()}
    for name, cls in _RECORDS.items():
        hints = _hints(cls)
        fields = tuple(f.name for f in dataclasses.fields(cls))
        env[name] = cls
        env[f"INFO_{name}"] = _Info(name, fields, tuple(hints[f] for f in fields))
        exec(sources[name], env)  # tcopy's own code, made from the annotations above
        _DECODERS[cls] = env[f"R_{name}"]
    for name, cls in _RECORDS.items():  # after every R_: these may decode records too
        hints = _hints(cls)
        for field in (f.name for f in dataclasses.fields(cls)):
            if f"D_{name}_{field}" in sources[name]:
                env[f"D_{name}_{field}"] = decoder(_inner(hints[field])[0])


_generate()


def decode_fields(cls: type, value: Any) -> dict[str, Any]:
    """``value`` as the fields of dataclass ``cls`` (an object with exactly its field names, each
    of its annotated type), for plain data that becomes one (``tcopy compare``'s rows)."""
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    if type(value) is not dict or value.keys() != set(names):
        raise WireError(f"expected the fields of {cls.__name__}, not {show(value)}")
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


__all__ = ["MAX_VALUE_DEPTH", "WireError", "decode_as", "decode_fields", "decoder", "named_pairs", "plain"]
