"""tcopy's own errors and Python's: names, the sandbox, limits."""

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


@entry("script.not-allowed", r".*", "NotAllowedError")
def not_allowed(ctx: ErrorContext, m: re.Match[str]) -> str:
    if "Did you mean" in m.string:
        return "The name looks misspelled: tcopy suggests the closest name it allows (above)."
    return (
        "tcopy runs scripts in a sandbox that allows only listed torch functions, tensor methods and builtins; "
        "this use is not among them (see the README's script language section). If you trust the "
        "script, 'tcopy run --trust' runs it with real Python, not sandboxed."
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
