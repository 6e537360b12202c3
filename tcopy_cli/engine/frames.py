"""Facts about the frames the tracer sees: whose code runs in them (the script's or a library's),
what a script function is called in step headers, and where a generator's frame stands.

CPython traces a ``yield`` as a return and going on after it as a call; the instruction a
frame stopped at tells which (``returned``, ``starting``), and whether an end of iteration is
the frame's own loop ending (``consumed``) rather than an error.
"""

from __future__ import annotations

import dis
import inspect
import os
from collections.abc import Collection
from types import CodeType, FrameType

COMPREHENSIONS = frozenset({"<listcomp>", "<setcomp>", "<dictcomp>", "<genexpr>"})
"""Comprehensions and generator expressions run in frames of their own (before 3.12); they are part of
the statement that runs them."""
PASS_THROUGH = (
    "torch/utils/_contextlib.py",
    "torch/nn/modules/module.py",
    "torch/autograd/function.py",
    "/contextlib.py",
)
"""Library code through which a script calls its own functions (decorators, module calls, custom autograd
Functions): a script function called from these is stepped."""
POSITIONS = hasattr(CodeType, "co_positions")
"""Columns of each instruction (3.11+): where statements share a line, which one runs."""
SUSPENDING = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR | inspect.CO_ITERABLE_COROUTINE
"""Code whose frame can return and later go on (generators, coroutines)."""
ITERATION_ENDS = (StopIteration, StopAsyncIteration, GeneratorExit)
"""Ends of iteration, not errors: Python consumes them in the loop that asked."""

_RETURNS = frozenset(dis.opmap[name] for name in ("RETURN_VALUE", "RETURN_CONST") if name in dis.opmap)
_TAKES_STOP = frozenset(dis.opmap[name] for name in ("FOR_ITER", "SEND", "END_SEND", "YIELD_FROM") if name in dis.opmap)
_FIRST_RESUME: dict[CodeType, int] = {}

Position = tuple[int | None, int | None, int | None, int | None]


def _opcode(frame: FrameType) -> int | None:
    code, at = frame.f_code.co_code, frame.f_lasti
    return code[at] if 0 <= at < len(code) else None


def returned(frame: FrameType) -> bool:
    """Whether the frame's last instruction is a ``return`` (the frame is done, not waiting at a ``yield``)."""
    return _opcode(frame) in _RETURNS


def consumed(frame: FrameType, exc: BaseException) -> bool:
    """Whether ``exc`` is an end of iteration that the frame's own instruction takes (a ``for``
    ending, ``yield from`` getting its result): no error, and the frame goes on."""
    return isinstance(exc, (StopIteration, StopAsyncIteration)) and _opcode(frame) in _TAKES_STOP


def starting(frame: FrameType) -> bool:
    """Whether a generator's frame is called for the first time (not going on after a ``yield``):
    no instruction ran yet (3.10), or none past its first ``RESUME`` (3.11 on)."""
    code = frame.f_code
    first = _FIRST_RESUME.get(code)
    if first is None:
        first = _FIRST_RESUME[code] = next((i.offset for i in dis.get_instructions(code) if i.opname == "RESUME"), -1)
    return frame.f_lasti <= first


def display_name(code: CodeType) -> str:
    """``f``, ``Net.forward``: the qualified name without enclosing functions."""
    name: str = getattr(code, "co_qualname", code.co_name)
    return name.rsplit(".<locals>.", 1)[-1]


def script_filename(origin: str) -> str:
    """The file name the script's code objects carry, and its ``__file__``: for a file, its path made
    absolute as ``python FILE`` makes it (joined to the working directory, not normalised: what a
    ``torch.jit.trace`` graph or a traceback prints); else ``<stdin>``, ``<inline>``."""
    if origin == "-":
        return "<stdin>"
    return os.path.join(os.getcwd(), origin) if os.path.isfile(origin) else f"<{origin.strip('<>') or 'script'}>"


COMPILE_WRAPPER_FILE = os.path.join("torch", "_dynamo", "eval_frame.py")
"""Where the function ``torch.compile`` returns (``compile_wrapper``) is defined."""


class CodeKinds:
    """What runs in a frame, by its code object: ``module``, ``function`` (stepped), ``lambda`` (locals
    shown, not stepped), ``other`` (comprehensions, class bodies), ``library`` (not the script's file)
    or ``compiled`` (a function ``torch.compile`` made, or one of ``unrecorded``: code that runs without
    tcopy's mode)."""

    def __init__(self, filename: str, unrecorded: Collection[CodeType] = ()) -> None:
        self.filename = filename
        self.unrecorded = unrecorded
        self.known: dict[CodeType, str] = {}
        """The kind of each code object seen so far (read directly where every call counts)."""
        self._positions: dict[CodeType, list[Position]] = {}

    def __call__(self, code: CodeType) -> str:
        kind = self.known.get(code)
        if kind is None:
            if code.co_filename != self.filename:
                compiled = code in self.unrecorded or (
                    code.co_name == "compile_wrapper" and code.co_filename.endswith(COMPILE_WRAPPER_FILE)
                )
                kind = "compiled" if compiled else "library"
            elif code.co_name == "<module>":
                kind = "module"
            elif code.co_name == "<lambda>":
                kind = "lambda"
            elif code.co_name in COMPREHENSIONS or not code.co_flags & inspect.CO_OPTIMIZED:
                kind = "other"
            else:
                kind = "function"
            self.known[code] = kind
        return kind

    def position(self, frame: FrameType) -> Position | None:
        """(line, end line, column, end column) of the instruction ``frame`` runs (3.11+)."""
        if not POSITIONS:
            return None
        code = frame.f_code
        positions = self._positions.get(code)
        if positions is None:
            positions = self._positions[code] = list(code.co_positions())
        at = frame.f_lasti // 2
        return positions[at] if 0 <= at < len(positions) else None

    def called_back(self, frame: FrameType) -> bool:
        """True when library code (other than the ways a script calls its own functions) calls ``frame``'s
        function.

        Decorators (torch's grad-mode decorators, contextlib), calling a module (``forward``) and
        ``Function.apply`` pass calls through; any other library frame between the function and the
        script means the library calls it back (a hook, the function given to ``jacobian``).
        """
        caller = frame.f_back
        while caller is not None and self(caller.f_code) == "library":
            if not caller.f_code.co_filename.replace(os.sep, "/").endswith(PASS_THROUGH):
                return True
            caller = caller.f_back
        return False

    def script_frame(self, frame: FrameType | None) -> FrameType | None:
        """The innermost frame running the script's own code, from ``frame`` outwards."""
        while frame is not None and self(frame.f_code) == "library":
            frame = frame.f_back
        return frame
