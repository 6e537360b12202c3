"""Shipped example scripts: each file's first comment line is its title.

This package is data: the scripts are read as text and run by tcopy, never imported.
"""

from __future__ import annotations

from importlib import resources


def _files() -> dict[str, str]:
    root = resources.files(__name__)
    out: dict[str, str] = {}
    for entry in root.iterdir():
        name = entry.name
        if name.endswith(".py") and not name.startswith("_"):
            out[name[:-3]] = entry.read_text(encoding="utf-8")
    return dict(sorted(out.items()))


def raw(name: str) -> bytes:
    """The bytes of an example's file; KeyError if there is none by that name."""
    if name not in _files():
        raise KeyError(name)
    return resources.files(__name__).joinpath(f"{name}.py").read_bytes()


def names() -> list[str]:
    """Example names, sorted."""
    return list(_files())


def source(name: str) -> str:
    """The script text of an example; KeyError if there is none by that name."""
    return _files()[name]


def title(text: str) -> str:
    """The first comment line of a script."""
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("#"):
            return s.lstrip("#").strip()
        if s:
            break
    return ""


def catalogue() -> list[tuple[str, str]]:
    """(name, title) for every example."""
    return [(name, title(text)) for name, text in _files().items()]
