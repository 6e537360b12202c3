"""The error catalogue: one entry per error, matched on the exception type and torch's message.

An entry's pattern matches only the stable part of the message (the wording torch has
kept from 2.1 on); its ``explain`` function gets the match and the failing step's
context and says, for this script, which tensors and which call, why, and the fix.
Family modules (``autograd``, ``shapes`` ...) add entries with the ``entry`` decorator;
entries are tried in the order they were added.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from tcopy_cli.explain.errors.context import ErrorContext

Explain = Callable[[ErrorContext, re.Match[str]], str]


@dataclass(frozen=True)
class Entry:
    """One catalogued error."""

    id: str
    types: tuple[str, ...]
    pattern: re.Pattern[str]
    explain: Explain

    def match(self, type_name: str, message: str) -> re.Match[str] | None:
        """The pattern's match when the type is one of ``types``."""
        return self.pattern.search(message) if type_name in self.types else None


CATALOGUE: list[Entry] = []


def entry(entry_id: str, pattern: str, *types: str) -> Callable[[Explain], Explain]:
    """Add the decorated function to the catalogue under ``entry_id`` (RuntimeError if no type is given)."""

    def add(explain: Explain) -> Explain:
        if any(e.id == entry_id for e in CATALOGUE):
            raise ValueError(f"duplicate catalogue entry {entry_id}")
        CATALOGUE.append(Entry(entry_id, types or ("RuntimeError",), re.compile(pattern, re.S), explain))
        return explain

    return add


def find(type_name: str, message: str) -> tuple[Entry, re.Match[str]] | None:
    """The first entry that matches an error, with its match."""
    for e in CATALOGUE:
        m = e.match(type_name, message)
        if m is not None:
            return e, m
    return None
