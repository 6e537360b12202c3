"""A bounded memo for what drawing a step works out again and again (cell text, grids, wrapped lines)."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

V = TypeVar("V")


class Memo(Generic[V]):
    """Values by key, at most ``kept`` of them (all dropped at once when full).

    ``owner``: an object whose ``id`` is part of the key. The entry keeps it referenced
    and answers only for that very object, so a later object given the same id (once
    the first is gone) is never taken for it.
    """

    def __init__(self, kept: int = 4096) -> None:
        self.kept = kept
        self.entries: dict[Hashable, tuple[object, V]] = {}

    def get(self, key: Hashable, make: Callable[..., V], *args: Any, owner: object = None) -> V:
        """The value remembered for ``key`` (and ``owner``), or ``make(*args)``'s, remembered."""
        found = self.entries.get(key)
        if found is not None and found[0] is owner:
            return found[1]
        if len(self.entries) >= self.kept:
            self.entries.clear()
        value = make(*args)
        self.entries[key] = (owner, value)
        return value
