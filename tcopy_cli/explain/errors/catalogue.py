"""The error catalogue: one entry per error, matched on the exception type and torch's message.

An entry's pattern matches only the stable part of the message (the wording torch has
kept from 2.1 on); its ``explain`` function gets the match and the failing step's
context and says, for this script, which tensors and which call, why, and the fix.
Family modules (``autograd``, ``shapes`` ...) add entries with the ``entry`` decorator;
entries are tried in the order they were added.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable
from dataclasses import dataclass

from tcopy_cli.explain.errors.context import ErrorContext, out_of_place, shape_text

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


def template(
    entry_id: str,
    pattern: str,
    text: str,
    calls: tuple[str, ...] = (),
    in_place: bool | None = None,
    types: tuple[str, ...] = ("RuntimeError",),
    fallback: str = "{op} on {where} raised it; tcopy could not find the tensors it involves in this statement.",
) -> None:
    """Add an entry whose explanation is ``text`` filled in for the failing statement.

    The operation is the first one named in ``calls`` (or the first in-place one when
    ``in_place``); ``text`` may use ``{op}`` (that operation as written), ``{where}``
    (``line 3``), ``{who}`` (its receiver or first tensor argument), ``{made}`` (`` (made
    at line 2: ...)``), ``{shape}``, ``{dtype}``, ``{device}``, ``{ndim}``, ``{grad_fn}`` (of
    ``who``), ``{a}``, ``{b}``, ``{a_shape}``, ``{b_shape}`` (its first two tensor operands),
    ``{fix}`` (the out-of-place form of an in-place operation) and the pattern's named
    groups. ``fallback`` (same fields) is said when the tensors ``text`` names are not found.
    """
    needed = {name for _, name, _, _ in string.Formatter().parse(text) if name}

    def explain(ctx: ErrorContext, m: re.Match[str]) -> str:
        call = ctx.call(*calls, in_place=in_place)
        fields = {k: v or "" for k, v in m.groupdict().items()}
        fields.update(op=call.text if call else "This operation", where=ctx.where, fix="an out-of-place operation")
        if call is not None and call.in_place:
            fields["fix"] = out_of_place(call)
        who = (ctx.tensor(call.receiver) or ctx.tensor(call.arg(0))) if call else None
        fields["who"] = who or (call.receiver if call and call.receiver else "the tensor")
        found = set(fields)
        if who is not None:
            r = ctx.record(who)
            found |= {"made", "shape", "dtype", "device", "ndim", "grad_fn"}
            fields.update(made=ctx.made_at(who), shape=shape_text(r.shape), dtype=r.dtype, device=r.device)
            fields.update(ndim=str(len(r.shape)), grad_fn=r.grad_fn or "none")
        operands = ctx.tensors_in(*call.operands) if call else []
        if len(operands) >= 2:
            a, b = operands[:2]
            found |= {"a", "b", "a_shape", "b_shape"}
            fields.update(a=a, b=b, a_shape=ctx.shape(a), b_shape=ctx.shape(b))
        if needed <= found:
            return text.format(**fields)
        return fallback.format_map(_Fields(fields))

    entry(entry_id, pattern, *types)(explain)


class _Fields(dict[str, str]):
    """Template fields; one that could not be filled reads as empty."""

    def __missing__(self, key: str) -> str:
        return ""
