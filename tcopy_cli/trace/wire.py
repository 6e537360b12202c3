"""A lossless codec for step records between the worker and the parent.

Records are frozen dataclasses of plain data. ``encode`` turns one into JSON-ready
data, tagging every dataclass with its class name; ``decode`` rebuilds it from the
registry of record classes, which holds every dataclass defined in
``tcopy_cli.trace.records``, so a field or a record class added there travels without
changes here. Tuples, frozensets, dicts with non-string keys and non-finite floats
come back as they went; nothing is ever evaluated or imported from the wire.

Nothing here imports torch: the parent decodes without it.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from tcopy_cli.trace import records

_TAG = "__t"
_SPECIAL = ("__tuple", "__frozenset", "__set", "__items")


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


_SCALARS = (type(None), bool, int, float, str)
# Field names of each record class (dataclasses.fields is slow; this runs for every record).
_FIELDS: dict[type, tuple[str, ...]] = {
    cls: tuple(f.name for f in dataclasses.fields(cls)) for cls in _REGISTRY.values()
}
_INIT: dict[type, frozenset[str]] = {
    cls: frozenset(f.name for f in dataclasses.fields(cls) if f.init) for cls in _REGISTRY.values()
}


def encode(obj: Any) -> Any:
    """JSON-ready data for a record (or any value a record holds)."""
    cls = type(obj)
    if cls in _SCALARS:
        return obj
    names = _FIELDS.get(cls)
    if names is not None:
        out: dict[str, Any] = {_TAG: cls.__name__}
        for name in names:
            value = getattr(obj, name)
            out[name] = value if type(value) in _SCALARS else encode(value)
        return out
    # The common containers first (checked by exact type: this runs for every value of every step).
    if cls is list:
        for x in obj:
            if type(x) not in _SCALARS:
                return [encode(x) for x in obj]
        return obj
    if cls is dict:
        return _encode_dict(obj)
    if cls is tuple:
        return {"__tuple": [encode(x) for x in obj]}
    if isinstance(obj, (bool, int, float, str)):  # subclasses (e.g. IntEnum) travel as their base
        return obj
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
    if all(isinstance(k, str) for k in obj) and _TAG not in obj and not any(k in obj for k in _SPECIAL):
        return {k: v if type(v) in _SCALARS else encode(v) for k, v in obj.items()}
    return {"__items": [[encode(k), encode(v)] for k, v in obj.items()]}


def decode(data: Any) -> Any:
    """The value ``encode`` was given."""
    if type(data) in _SCALARS:
        return data
    if isinstance(data, list):
        if all(type(x) in _SCALARS for x in data):
            return data
        return [decode(x) for x in data]
    if not isinstance(data, dict):
        raise WireError(f"unexpected {type(data).__name__} on the wire")
    if _TAG in data:
        name = data[_TAG]
        cls = _REGISTRY.get(name) if isinstance(name, str) else None
        if cls is None:
            raise WireError(f"unknown record class {name!r}")
        values = {k: decode(v) for k, v in data.items() if k != _TAG}
        init = _INIT[cls]
        if not init.issuperset(values):
            unknown = set(values) - set(_FIELDS[cls])
            if unknown:
                raise WireError(f"{name} has no field {sorted(unknown)[0]!r}")
        obj = cls(**{k: v for k, v in values.items() if k in init})
        for k, v in values.items():
            if k not in init:
                object.__setattr__(obj, k, v)
        return obj
    if len(data) == 1:
        ((key, value),) = data.items()
        if key == "__tuple":
            return tuple(decode(x) for x in value)
        if key == "__frozenset":
            return frozenset(decode(x) for x in value)
        if key == "__set":
            return {decode(x) for x in value}
        if key == "__items":
            return {_hashable(decode(k)): decode(v) for k, v in value}
    return {k: decode(v) for k, v in data.items()}


def _hashable(key: Any) -> Any:
    return tuple(key) if isinstance(key, list) else key


def dumps(obj: Any) -> str:
    """One line of JSON for a record (non-finite floats allowed: both ends are Python)."""
    return json.dumps(encode(obj), ensure_ascii=True, separators=(",", ":"))


def loads(line: str | bytes) -> Any:
    """The record from one ``dumps`` line."""
    return decode(json.loads(line))


__all__ = ["WireError", "decode", "dumps", "encode", "loads", "registry"]
