"""Notes of one step that say the same thing about different tensors, told once (tables and Markdown).

``ts = [t] * 1000`` makes a thousand ``relation.same-object`` notes that differ only in the
item's name, and ``sd = model.state_dict()`` one note per parameter that differs only in the
names and the storage label. A view shows the first note in full and names the others after
it: ``The same holds for ts[1…999].``, or with several names to a note, ``The same holds for
sd["0.bias"] (S2) and model.0.bias; sd["2.weight"] (S3) and ...``. JSON keeps every note as made.

Two notes are told together only where their texts are the same once each name the note is
about and each storage or version-counter label is replaced by the order of its first
appearance: the same sentence, word for word, about other tensors.
"""

from __future__ import annotations

import re
from dataclasses import replace

from tcopy_cli.render.names import common_end, grouped_names
from tcopy_cli.trace.records import Note

LABEL = r"\b[SV]\d+\b"
"""A storage label (``S3``) or a version-counter label (``V3``), as tables show them."""
LISTED = 6
"""Other notes' tensors named in full after the first note, at most (the rest are counted)."""

Template = tuple[str, str, tuple[str, ...], tuple[int, ...]]
"""A note's kind, severity, the pieces of its text between its names and labels, and which of
them (numbered in order of first appearance) stands in each gap."""


def template(note: Note) -> tuple[Template, tuple[str, ...]]:
    """The note's template, and the names and labels it took out (each once, in order)."""
    names = sorted(set(note.tensors), key=len, reverse=True)
    # A name stands alone: not part of a longer name or word (``a`` in "a view", ``x`` in ``xs``).
    alone = [rf"(?<![\w.\[\]\"']){re.escape(n)}(?![\w\[])" for n in names]
    parts = re.split("(" + "|".join([*alone, LABEL]) + ")", note.text)
    found: dict[str, int] = {}
    gaps = tuple(found.setdefault(token, len(found)) for token in parts[1::2])
    return (note.kind, note.severity, tuple(parts[::2]), gaps), tuple(found)


def grouped_notes(notes: list[Note]) -> list[Note]:
    """``notes``, where notes that say the same thing about different tensors are one note (at
    the place of the first): its text, then ``The same holds for ...`` with the others' tensors."""
    if len(notes) < 2:
        return notes
    groups: dict[Template, list[tuple[Note, tuple[str, ...]]]] = {}
    for i, note in enumerate(notes):
        key, tokens = template(note)
        if any("`" in n for n in note.tensors):
            # Markdown would pair a backtick in one name with one in the next: such a note stays alone
            key = (note.kind, note.severity, (str(i),), ())
        groups.setdefault(key, []).append((note, tokens))
    out: list[Note] = []
    for members in groups.values():
        first, tokens = members[0]
        if len(members) == 1:
            out.append(first)
            continue
        others = [t for _, t in members[1:]]
        varies = [i for i in range(len(tokens)) if any(t[i] != tokens[i] for t in others)]
        if not varies:  # the same note again, word for word
            out.append(first)
            continue
        names = dict.fromkeys(n for note, _ in members for n in note.tensors)
        text = f"{first.text} The same holds for {_others(members[1:], varies, tokens, first)}."
        out.append(replace(first, text=text, tensors=tuple(names)))
    return out


def _others(members: list[tuple[Note, tuple[str, ...]]], varies: list[int], first: tuple[str, ...], note: Note) -> str:
    """``ts[1…999]``, or ``sd["0.bias"] (S2) and model.0.bias; ...``: what the other notes are about,
    each note's names in its own order (the one it is about first) and its labels after the first."""
    named = [i for i in varies if first[i] in note.tensors]
    if varies == named and len(named) == 1:
        return grouped_names([t[named[0]] for _, t in members], most=LISTED)
    paired = _paired(members, named, [i for i in varies if i not in named])
    if paired is not None:
        return paired
    items = []
    for other, tokens in members[:LISTED]:
        names = [n for n in other.tensors if n in {tokens[i] for i in named}]
        labels = [tokens[i] for i in varies if i not in named]
        head = names[0] + (" (" + ", ".join(labels) + ")" if labels else "") if names else ", ".join(labels)
        items.append(" and ".join([head, *names[1:]]))
    rest = len(members) - LISTED
    return "; ".join(items) + (f"; and {rest:,} more" if rest > 0 else "")


PAIRED = 3
"""From this many other notes about a tensor of one module and its name under another (``model.blocks.9.1.weight``
and ``b.1.weight``), they are told as the first module's names ``each with its name under b``."""


def _paired(members: list[tuple[Note, tuple[str, ...]]], named: list[int], labels: list[int]) -> str | None:
    """``model.blocks.9.{1,4}.{weight,bias}, model.blocks.9.3.weight, each with its name under b
    (S59–S63)``: notes each about two names, one module's tensor and the same tensor under
    another module's name, with at most one label each; else None."""
    if len(members) < PAIRED or len(named) != 2 or len(labels) > 1:
        return None
    pairs = [(tokens[named[0]], tokens[named[1]]) for _, tokens in members]
    a, b = pairs[0]
    rest = a[len(a) - common_end(a, b) :]
    if "." not in rest:
        return None
    rest = rest[rest.index(".") :]  # from a dot on: model.blocks.9 | .1.weight, b | .1.weight
    theirs, mine = a[: len(a) - len(rest)], b[: len(b) - len(rest)]
    if (
        not theirs
        or not mine
        or any(not (x.startswith(theirs + ".") and y == mine + x[len(theirs) :]) for x, y in pairs)
    ):
        return None
    shown = [tokens[labels[0]] for _, tokens in members] if labels else []
    told = f" ({', '.join(shown)})" if shown else ""
    return f"{grouped_names([x for x, _ in pairs], most=len(pairs))}, each with its name under {mine}{told}"
