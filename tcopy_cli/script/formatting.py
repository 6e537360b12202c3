"""``str.format``, ``str.format_map`` and ``format()`` for scripts.

Python's own formatter reads any attribute or item a field names (``"{0.__class__}"``,
``"{0.__init__.__globals__}"``): the route simpleeval and asteval were escaped through.
Here every ``.name`` in a field goes through the sandbox's attribute allow-list, every
``[key]`` through an index of a value the script may hold, a name or key starting with
``_`` is refused outright, and widths and results are held to the string limits.
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from typing import Any

from tcopy_cli.errors import NotAllowedError
from tcopy_cli.script.guards import Guards
from tcopy_cli.script.sandbox import check_text, get_attribute


class SafeFormatter(string.Formatter):
    """A ``string.Formatter`` whose fields reach only what the script could reach itself."""

    def __init__(self, guards: Guards) -> None:
        self.guards = guards

    def get_field(self, field_name: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        first, rest = _field_name_split(field_name)
        value = self.get_value(first, args, kwargs)
        for is_attr, key in rest:
            if isinstance(key, str) and key.startswith("_"):
                what = "attribute" if is_attr else "key"
                raise NotAllowedError(f"format field '{field_name}': the {what} '{key}' starts with '_'")
            if is_attr:
                value = get_attribute(value, key)
            else:
                check_text(value)
                self.guards.index(value, key)
                value = value[key]
        return value, first

    def format_field(self, value: Any, format_spec: str) -> str:
        check_text(value)
        self.guards.formatted(value)
        self.guards.format_spec(format_spec)
        text = format(value, format_spec)
        self.guards.text(text, "the formatted value is too long")
        return text

    def vformat(self, format_string: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> str:
        text = super().vformat(format_string, args, kwargs)
        self.guards.text(text, "the formatted string is too long")
        return text


def _field_name_split(field_name: str) -> tuple[Any, Any]:
    import _string  # the parser str.format itself uses

    return _string.formatter_field_name_split(field_name)  # type: ignore[no-any-return]


def bind_format(formatter: SafeFormatter, text: str, method: str) -> Any:
    """``text.format`` or ``text.format_map`` as a callable for the script's call."""
    if method == "format":

        def fmt(*args: Any, **kwargs: Any) -> str:
            return formatter.vformat(text, args, kwargs)

        return fmt

    def fmt_map(mapping: Any) -> str:
        if not isinstance(mapping, dict):
            raise NotAllowedError("format_map() takes a dict here")
        return formatter.vformat(text, (), mapping)

    return fmt_map


def make_format(formatter: SafeFormatter) -> Any:
    """The script's ``format(value, spec)`` builtin."""

    def script_format(value: Any, format_spec: str = "") -> str:
        if not isinstance(format_spec, str):
            raise TypeError(f"format() argument 2 must be str, not {type(format_spec).__name__}")
        return formatter.format_field(value, format_spec)

    return script_format
