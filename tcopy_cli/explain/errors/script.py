"""tcopy's own errors and Python's: names and limits."""

from __future__ import annotations

import re

from tcopy_cli.explain.errors.catalogue import entry
from tcopy_cli.explain.errors.context import ErrorContext


@entry("script.limit", r".*", "LimitExceeded", "TimeoutExceeded")
def limit(ctx: ErrorContext, m: re.Match[str]) -> str:
    return (
        "tcopy stopped this statement because it would exceed one of its resource limits; each limit has an "
        "option to raise it (see tcopy run --help)."
    )


@entry("script.name", r"name '(?P<name>[^']+)' is not defined", "NameError")
def name_error(ctx: ErrorContext, m: re.Match[str]) -> str:
    name = m["name"]
    origin = ctx.state.bound_at.get(ctx.keys.get(name, name))
    if origin is not None and name not in ctx.tensors:
        said = f"{name} held a tensor from {origin}, but no longer exists here (deleted with del)."
    else:
        said = f"No statement before {ctx.where} assigned '{name}' (or it was deleted with del)."
    return said
