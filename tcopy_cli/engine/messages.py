"""An error's message as Python's own traceback ends with it."""

from __future__ import annotations

from types import FrameType

from tcopy_cli.suggest import python_suggestion


def error_message(error: BaseException, where: FrameType | None = None) -> str:
    """The error's message as Python's traceback ends with it: a KeyError's key as its repr, and a
    NameError's or AttributeError's ``. Did you mean: 'x'?`` where a close name exists (Python adds it
    when it prints the traceback, so the exception's own text lacks it). ``where``: the frame it is
    raised in, while its traceback is not attached yet."""
    if isinstance(error, KeyError):
        return repr(error.args[0]) if error.args else ""
    message = str(error)
    name = getattr(error, "name", None)
    if not isinstance(error, (NameError, AttributeError)) or not isinstance(name, str) or "Did you mean" in message:
        return message
    try:
        if isinstance(error, AttributeError):
            scopes: list[list[str]] = [sorted(dir(error.obj))]
        else:
            tb = error.__traceback__
            while tb is not None and tb.tb_next is not None:
                tb = tb.tb_next
            frame = tb.tb_frame if tb is not None else where
            scopes = [list(s) for s in (frame.f_locals, frame.f_globals, frame.f_builtins)] if frame else []
    except Exception:  # dir() runs the object's own __dir__: never fail the report for it
        return message
    for scope in scopes:  # as CPython looks: locals, then globals, then builtins
        found = python_suggestion(name, scope, attribute=isinstance(error, AttributeError))
        if found is not None:
            return f"{message}. Did you mean: '{found}'?"
    return message
