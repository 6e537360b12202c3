"""The script's builtins (len, range, print ...) and its captured output."""

from __future__ import annotations

import builtins as py
import io
from collections.abc import Callable, Iterable
from typing import Any

from tcopy_cli.errors import NotAllowedError
from tcopy_cli.script import policy
from tcopy_cli.script.guards import Guards
from tcopy_cli.script.sandbox import ClassProxy, PassableBuiltin, SafeFunction, TypeView

SIZED_BUILTINS = frozenset(
    {"list", "tuple", "set", "sorted", "sum", "min", "max", "any", "all", "enumerate", "zip", "reversed", "dict", "map"}
)
"""Builtins that materialise their arguments: each is size-checked first."""
DISPLAY_BUILTINS = frozenset({"print", "str", "type", "bool", "len"})
"""Builtins that only display their arguments, so any storable value may be passed."""


class Capture:
    """``with output.capture() as buffer:`` prints inside go to ``buffer``; the previous buffer comes back after."""

    __slots__ = ("buffer", "output", "saved")

    def __init__(self, output: Output) -> None:
        self.output = output
        self.buffer = io.StringIO()
        self.saved = output.buffer

    def __enter__(self) -> io.StringIO:
        self.saved, self.output.buffer = self.output.buffer, self.buffer
        return self.buffer

    def __exit__(self, *exc: object) -> None:
        self.output.buffer = self.saved


class Output:
    """What the script prints: into the current step's buffer, bounded by --max-output."""

    def __init__(self, guards: Guards) -> None:
        self.guards = guards
        self.buffer = io.StringIO()
        self.printed = 0

    def capture(self) -> Capture:
        """A context that sends what is printed inside it to a fresh buffer."""
        return Capture(self)

    def print(self, *args: Any, **kwargs: Any) -> None:
        """The script's ``print``: sep, end and flush only; never a file."""
        unknown = set(kwargs) - {"sep", "end", "flush"}
        if unknown:
            name = sorted(unknown)[0]
            if name == "file":
                raise NotAllowedError("print(file=...) is not allowed: scripts print to tcopy's capture only")
            raise TypeError(f"'{name}' is an invalid keyword argument for print()")
        sep, end = kwargs.get("sep", " "), kwargs.get("end", "\n")
        for value in (sep, end):
            if value is not None and not isinstance(value, str):
                raise TypeError(f"sep and end must be None or a string, not {type(value).__name__}")
        text = (" " if sep is None else str(sep)).join(str(a) for a in args) + ("\n" if end is None else str(end))
        self.printed += len(text)
        self.guards.output(self.printed)
        self.buffer.write(text)

    def echo(self, text: str) -> str:
        """An expression's value as the REPL shows it: counted as output, not printed."""
        self.printed += len(text)
        self.guards.output(self.printed)
        return text


class ObjectIds:
    """``id()`` for one run: a small number per object, never a memory address.

    Two objects alive at the same time have equal ids only if they are the same object.
    As in Python, a number may come back for a new object once the old one is gone
    (only which addresses were reused can be learnt from it, never an address).
    """

    def __init__(self) -> None:
        self.numbers: dict[int, int] = {}

    def __call__(self, obj: Any) -> int:
        return self.numbers.setdefault(id(obj), len(self.numbers) + 1)


def _input(*args: Any, **kwargs: Any) -> Any:
    raise NotAllowedError("input() is not allowed: scripts may not read from the terminal")


def _breakpoint(*args: Any, **kwargs: Any) -> None:
    """A no-op: tcopy already stops after every statement (--pause steps interactively)."""


PASSABLE_BUILTINS = frozenset({"print", "len", "abs"})
"""Builtins a script may also hold as values and hand over as callbacks (hooks, sort keys)."""


def make_builtins(
    output: Output, is_script_callable: Callable[[Any], bool], classes: Iterable[ClassProxy] = ()
) -> dict[str, Any]:
    """The names a script finds when its own and the module's names don't have them.

    ``classes``: more class proxies (torch.Tensor ...) that ``type(x)`` gives back as
    themselves, so that ``type(x) is torch.Tensor`` holds as in Python.
    """
    known: dict[type, ClassProxy | TypeView] = {}
    views: dict[type, ClassProxy | TypeView] = {}

    def _type(obj: Any) -> ClassProxy | TypeView:
        cls = type(obj)
        found = known.get(cls) or views.get(cls)
        if found is None:
            found = views[cls] = TypeView(cls)  # one per class: type(a) is type(b) as in Python
        return found

    def _enumerate(it: Any, start: int = 0) -> list[tuple[int, Any]]:
        return list(enumerate(it, start))

    def _zip(*its: Any) -> list[tuple[Any, ...]]:
        return list(zip(*its))

    def _reversed(it: Any) -> list[Any]:
        return list(reversed(it))

    def _map(fn: Any, *its: Any) -> list[Any]:
        if not is_script_callable(fn):
            raise NotAllowedError("map() takes only functions the script defined (def or lambda)")
        return list(map(fn, *its))

    table: dict[str, Any] = {
        "print": PassableBuiltin("print", output.print),
        "type": SafeFunction("type", _type),
        "enumerate": SafeFunction("enumerate", _enumerate),
        "zip": SafeFunction("zip", _zip),
        "reversed": SafeFunction("reversed", _reversed),
    }
    for name in ("len", "abs", "min", "max", "sum", "round", "sorted", "any", "all", "isinstance"):
        table[name] = (PassableBuiltin if name in PASSABLE_BUILTINS else SafeFunction)(name, getattr(py, name))
    for name in ("range", "float", "int", "bool", "str", "list", "tuple", "dict", "set", "slice"):
        table[name] = ClassProxy(name, getattr(py, name))
    for name in policy.SAFE_EXCEPTIONS:
        table[name] = ClassProxy(name, getattr(py, name))
    table["map"] = SafeFunction("map", _map)
    table["id"] = SafeFunction("id", ObjectIds())
    table["input"] = SafeFunction("input", _input)
    table["breakpoint"] = SafeFunction("breakpoint", _breakpoint)
    table["super"] = SafeFunction("super", lambda: None)  # the interpreter's call handler answers super()
    for proxy in [*table.values(), *classes]:
        # Only where the proxy shows as Python shows the class (not nn.Linear, named by its alias).
        if isinstance(proxy, ClassProxy) and repr(proxy) == repr(proxy.cls):
            known.setdefault(proxy.cls, proxy)
    return table
