"""'Did you mean ...?' for a misspelled name, method, function or example (no torch here)."""

from __future__ import annotations

import difflib
import sys
from collections.abc import Iterable


def close_matches(word: str, candidates: Iterable[str], n: int = 3) -> list[str]:
    """The candidates closest to ``word``, best first (difflib's ratio, cutoff 0.6).

    Private names (leading underscore) are never suggested unless ``word`` is one.
    """
    pool = {c for c in candidates if c != word and (word.startswith("_") or not c.startswith("_"))}
    return difflib.get_close_matches(word, sorted(pool), n=n, cutoff=0.6)


# Python's own suggestion for a NameError or AttributeError, as its traceback prints it: the same
# Levenshtein distance (a case change costs 1, any other edit 2) and the same bounds as CPython's.
_MAX_CANDIDATE_ITEMS = 750
_MAX_STRING_SIZE = 40
_MOVE_COST = 2
_CASE_COST = 1


def _substitution_cost(a: str, b: str) -> int:
    if a == b:
        return 0
    return _CASE_COST if a.lower() == b.lower() else _MOVE_COST


def _levenshtein(a: str, b: str, max_cost: int) -> int:
    if a == b:
        return 0
    pre = 0
    while pre < len(a) and pre < len(b) and a[pre] == b[pre]:
        pre += 1
    a, b = a[pre:], b[pre:]
    post = 0
    while post < len(a) and post < len(b) and a[-1 - post] == b[-1 - post]:
        post += 1
    a, b = a[: len(a) - post], b[: len(b) - post]
    if not a or not b:
        return _MOVE_COST * (len(a) + len(b))
    if len(a) > _MAX_STRING_SIZE or len(b) > _MAX_STRING_SIZE:
        return max_cost + 1
    if len(b) < len(a):
        a, b = b, a
    if (len(b) - len(a)) * _MOVE_COST > max_cost:
        return max_cost + 1
    row = list(range(_MOVE_COST, _MOVE_COST * (len(a) + 1), _MOVE_COST))
    result = 0
    for b_index, b_char in enumerate(b):
        distance = result = b_index * _MOVE_COST
        minimum = max_cost + 1
        for index, a_char in enumerate(a):
            substitute = distance + _substitution_cost(b_char, a_char)
            distance = row[index]
            result = min(min(result, distance) + _MOVE_COST, substitute)
            row[index] = result
            minimum = min(minimum, result)
        if minimum > max_cost:
            return max_cost + 1
    return result


def python_suggestion(name: str, candidates: Iterable[str], attribute: bool = False) -> str | None:
    """The candidate this Python's traceback suggests for a misspelled ``name`` ("Did you mean: ...?"),
    or None. (3.12 moved the search into ``traceback``: it takes no match farther than the name is long,
    and for an attribute no private name unless the name is one.)"""
    pool = list(candidates)
    if sys.version_info >= (3, 12) and attribute and not name.startswith("_"):
        pool = [c for c in pool if not c.startswith("_")]
    if len(pool) > _MAX_CANDIDATE_ITEMS or len(name) > _MAX_STRING_SIZE:
        return None
    best_distance = len(name) if sys.version_info >= (3, 12) else sys.maxsize
    best: str | None = None
    for possible in pool:
        if possible == name or not isinstance(possible, str):
            continue
        max_distance = min((len(possible) + len(name) + 3) * _MOVE_COST // 6, best_distance - 1)
        distance = _levenshtein(name, possible, max_distance)
        if distance > max_distance:
            continue
        if best is None or distance < best_distance:
            best, best_distance = possible, distance
    return best
