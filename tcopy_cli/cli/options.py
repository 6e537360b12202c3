"""Options every command shares, declared once.

Each option is an ``Annotated`` alias; a command names it as a parameter type. The
resource limits are added to every command by ``with_limits``, which replaces a ``limits``
parameter with one option per field of ``Limits`` (same flag, help and default in every
command) and hands the command one ``Limits`` object.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Optional, TypeVar

import typer

from tcopy_cli.cli.formats import OutputFormat
from tcopy_cli.errors import UsageError
from tcopy_cli.limits import DEFAULT_MAX_VALUES, READING_MAX_STEPS, Limits, view_max_steps

MAX_VALUES = DEFAULT_MAX_VALUES
"""--max-values default: list values of tensors up to this many elements."""


FormatOpt = Annotated[
    OutputFormat,
    typer.Option(
        "--format",
        "-f",
        metavar="FORMAT",
        help="table (Rich, default), json (JSON Lines, see README) or markdown.",
        case_sensitive=False,
    ),
]
NoColorOpt = Annotated[
    bool, typer.Option("--no-color", help="No colours (also: NO_COLOR=1). FORCE_COLOR=1 forces them.")
]


class ColorMode(str, Enum):
    """--color: auto (colours in a terminal), always (also in a pipe, e.g. for less -R), never."""

    auto = "auto"
    always = "always"
    never = "never"


ColorOpt = Annotated[
    ColorMode,
    typer.Option(
        "--color",
        metavar="WHEN",
        help="auto (colours in a terminal), always (also in a pipe: '| less -R'), never (same as --no-color).",
        case_sensitive=False,
    ),
]


def _width(value: Optional[int]) -> Optional[int]:
    """--width from 40 to 1000 (checked here, not by a range type: --help would show the range
    beside the option and leave its description less room)."""
    if value is not None and not 40 <= value <= 1000:
        raise typer.BadParameter(f"{value} is not in the range 40<=x<=1000.")
    return value


WidthOpt = Annotated[
    Optional[int],
    typer.Option(
        "--width",
        metavar="COLUMNS",
        callback=lambda value: _width(value),
        help="Terminal width for tables (default: detected; 80 in a pipe, 100 in a pipe with --export).",
    ),
]
DeviceOpt = Annotated[
    str,
    typer.Option(
        "--device",
        "-d",
        metavar="DEVICE",
        help="cpu, cuda, cuda:N, mps or auto (cuda if available, else mps, else cpu). "
        "Default device for tensor creation.",
    ),
]
MaxValuesOpt = Annotated[
    int,
    typer.Option(
        "--max-values",
        metavar="N",
        min=0,
        help="List values of tensors with at most N elements; summarise larger ones.",
    ),
]

# Where the script comes from (run, graph).
ScriptArg = Annotated[
    Optional[str],
    typer.Argument(help="Script path, or '-' for stdin (read from stdin when piped).", show_default=False),
]
CodeOpt = Annotated[
    Optional[str],
    typer.Option(
        "-e",
        "--exec",
        metavar="CODE",
        help="Run CODE given inline (statements separated by ';' or newlines).",
        show_default=False,
    ),
]
ExampleOpt = Annotated[
    Optional[str],
    typer.Option(
        "--example",
        "-x",
        metavar="NAME",
        help="Run a shipped example by name (see 'tcopy examples').",
        show_default=False,
    ),
]


SCRIPT_DIRECTORY = "@script"
"""What a bare ``--allow-read`` stands for (``cli.app.main`` rewrites it): the script's directory."""


def _permission(flag: str, help_text: str, **kwargs: Any) -> Any:
    return typer.Option(flag, help=help_text, rich_help_panel="Permissions", show_default=False, **kwargs)


# What a run may do beyond running (run, graph, repl, compare). Off by default, each named by flag.
AllowReadOpt = Annotated[
    Optional[list[str]],
    _permission(
        "--allow-read",
        "Let the script read files: bare '--allow-read' its own directory (the current one for -e and stdin), "
        "'--allow-read=PATH[,PATH]' those files and directories. By default it can read none of your files.",
        metavar="[=PATH]",
    ),
]
TrustOpt = Annotated[
    bool,
    _permission(
        "--trust",
        "Lift the wall: the script runs unconfined, with your files, network and environment (only for a script you "
        "would run with 'python' yourself). Piped input needs '-' given explicitly.",
    ),
]
RequireConfinementOpt = Annotated[
    bool,
    _permission(
        "--require-confinement",
        "Refuse to run a script where the kernel can't confine it (no Landlock or seccomp here); also "
        "TCOPY_REQUIRE_CONFINEMENT=1.",
        envvar="TCOPY_REQUIRE_CONFINEMENT",
    ),
]


def readable_paths(allow_read: list[str] | None, origin: str) -> tuple[str, ...]:
    """The absolute paths ``--allow-read`` grants (the script's directory for a bare flag); a path that
    does not exist is a usage error."""
    out: list[str] = []
    for given in allow_read or []:
        for part in given.split(","):
            if not part:
                continue
            if part == SCRIPT_DIRECTORY:
                script = Path(origin)
                path = script.parent if origin not in ("-", "<inline>") and script.is_file() else Path.cwd()
            else:
                path = Path(part).expanduser()
            if not path.exists():
                raise UsageError(f"--allow-read: {part} does not exist")
            resolved = str(path.resolve())
            if resolved not in out:
                out.append(resolved)
    return tuple(out)


METAVARS = {"--delay": "SECONDS", "--timeout": "SECONDS", "--export": "FILE", "--title": "TEXT"}
"""What --help names an option's value (short: the option table keeps room for the descriptions)."""


def _presenting(flag: str, help_text: str, minimum: float | None = None, show_default: bool = True) -> Any:
    metavar = METAVARS.get(flag, None if minimum is None else "N")
    return typer.Option(
        flag, metavar=metavar, min=minimum, help=help_text, show_default=show_default, rich_help_panel="Presenting"
    )


# How a run is shown and paced (run).
PauseOpt = Annotated[
    bool,
    _presenting(
        "--pause",
        "In a terminal, wait after each step: →/↓/PageDown/Enter/Space next, ←/↑/PageUp/b back, Home/End, q quits.",
    ),
]
DelayOpt = Annotated[float, _presenting("--delay", "Seconds to wait after each shown step (recorded demos).", 0)]
StepOpt = Annotated[
    Optional[int], _presenting("--step", "Show only step N (the whole script still runs).", 1, show_default=False)
]
FromOpt = Annotated[Optional[int], _presenting("--from", "Show steps from N on.", 1, show_default=False)]
ToOpt = Annotated[Optional[int], _presenting("--to", "Show steps up to M.", 1, show_default=False)]
ExportOpt = Annotated[
    Optional[Path],
    _presenting(
        "--export", "Also record the table view to FILE (.svg, .html, .txt or .cast for asciinema).", show_default=False
    ),
]
TitleOpt = Annotated[Optional[str], _presenting("--title", "Title of an exported SVG/HTML.", show_default=False)]
GraphOpt = Annotated[bool, _presenting("--graph", "After steps that change the autograd graph, draw it as a tree.")]
DepthOpt = Annotated[
    Optional[int],
    _presenting(
        "--depth",
        "Hide the steps inside script functions called more than N deep (0: the script's top level only); "
        "about calls only: a model's layers stay one row (--watch model.fc1 opens one).",
        0,
        show_default=False,
    ),
]
MemoryOpt = Annotated[
    bool, _presenting("--memory", "After each step, draw the storages and the bytes each name covers.")
]


def _limit(flag: str, minimum: float, help_text: str) -> Any:
    metavar = METAVARS.get(flag, "N")
    return typer.Option(flag, metavar=metavar, min=minimum, help="Limit: " + help_text, rich_help_panel="Limits")


# One option per field of Limits; the flag is the field's name with dashes.
LIMIT_OPTIONS: dict[str, Any] = {
    "max_elements": Annotated[int, _limit("--max-elements", 1, "elements in any one tensor.")],
    "max_bytes": Annotated[int, _limit("--max-bytes", 1, "bytes of all tensor storages after a step.")],
    "max_steps": Annotated[
        Optional[int],
        _limit(
            "--max-steps",
            1,
            f"executed statements (default {READING_MAX_STEPS:,} in the table and Markdown views and the REPL, "
            f"{Limits.max_steps:,} in JSON).",
        ),
    ],
    "max_iterations": Annotated[int, _limit("--max-iterations", 1, "turns of one loop of the script.")],
    "max_output": Annotated[int, _limit("--max-output", 0, "characters of output (prints, notes, errors).")],
    "max_script_bytes": Annotated[int, _limit("--max-script-bytes", 1, "size of the script.")],
    "timeout": Annotated[float, _limit("--timeout", 0, "wall-clock seconds for the run (0 = none).")],
}
"""Every field of Limits and its option (a test checks that none is missing)."""

F = TypeVar("F", bound=Callable[..., Any])


def with_limits(command: F) -> F:
    """Give a command every limit option; it receives them as one ``limits: Limits``."""
    signature = inspect.signature(command, eval_str=True)
    if "limits" not in signature.parameters:
        raise TypeError(f"{command.__name__} needs a 'limits' parameter to use @with_limits")
    defaults = Limits()
    kept = [p for p in signature.parameters.values() if p.name != "limits"]
    added = [
        inspect.Parameter(
            f.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=None if f.name == "max_steps" else getattr(defaults, f.name),
            annotation=LIMIT_OPTIONS[f.name],
        )
        for f in dataclasses.fields(Limits)
    ]

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        values = {name: kwargs.pop(name) for name in LIMIT_OPTIONS}
        if values["max_steps"] is None:  # the view's own default
            fmt = kwargs.get("fmt")
            values["max_steps"] = view_max_steps(getattr(fmt, "value", fmt))
        limits = Limits(**values)
        return command(*args, limits=limits, **kwargs)

    params = kept + added
    wrapper.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in params}
    return wrapper  # type: ignore[return-value]
