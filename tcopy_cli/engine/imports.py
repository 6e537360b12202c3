"""Imports run at full speed, untraced.

The line tracer (``engine.tracer``) is the process's trace function: Python calls it for every
function call, the library's too, and a library's import runs thousands of them (the first
optimizer a script makes imports ``torch._dynamo``, and with it sympy and some 800 modules:
1.6 s in plain Python, 2.9 s with even an empty trace function, more with tcopy's). No import runs
a statement of the script (a module beside it is imported, not stepped), so while an ``import``
statement loads a module the trace function is off, and it is back when the import returns or
raises. torch's dispatch record is another mechanism and still sees the torch calls an import
makes.
"""

from __future__ import annotations

import builtins
import contextlib
import sys
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def untraced_imports() -> Iterator[None]:
    """While it is open, ``import`` (``builtins.__import__``) runs with no trace function."""
    original = builtins.__import__

    def __import__(  # (the name a traceback through an import shows)
        name: str,
        globals: Any = None,
        locals: Any = None,
        fromlist: Any = (),
        level: int = 0,
    ) -> Any:
        trace = sys.gettrace()
        if trace is None or (name in sys.modules and not fromlist):
            return original(name, globals, locals, fromlist, level)
        sys.settrace(None)
        try:
            return original(name, globals, locals, fromlist, level)
        finally:
            sys.settrace(trace)

    builtins.__import__ = __import__
    try:
        yield
    finally:
        if builtins.__import__ is __import__:  # (a script may have put its own in)
            builtins.__import__ = original


__all__ = ["untraced_imports"]
