"""'Did you mean ...?' for a misspelled name, method, function or example (no torch here)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def close_matches(word: str, candidates: Iterable[str], n: int = 3) -> list[str]:
    """The candidates closest to ``word``, best first (difflib's ratio, cutoff 0.6).

    Private names (leading underscore) are never suggested unless ``word`` is one.
    """
    pool = {c for c in candidates if c != word and (word.startswith("_") or not c.startswith("_"))}
    return difflib.get_close_matches(word, sorted(pool), n=n, cutoff=0.6)


def did_you_mean(word: str, candidates: Iterable[str], prefix: str = "") -> str:
    """``". Did you mean: 'x'?"`` (Python's own wording) for the best match, or ``""``."""
    best = close_matches(word, candidates, n=1)
    return f". Did you mean: '{prefix}{best[0]}'?" if best else ""
