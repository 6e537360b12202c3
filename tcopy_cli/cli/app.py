"""The Typer app, exit statuses, and the one place errors become a short message.

Every command is registered through ``guarded`` (see __init__.py): whatever goes wrong
inside a command ends as ``tcopy: ...`` on stderr and an exit status, never as a Python
traceback.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import Annotated, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.text import Text

from tcopy_cli import __version__
from tcopy_cli.errors import TcopyError, UsageError
from tcopy_cli.printable import printable

EXIT_OK, EXIT_SCRIPT, EXIT_USAGE, EXIT_INTERRUPT = 0, 1, 2, 130

app = typer.Typer(
    name="tcopy",
    help="Run a short PyTorch script step by step and see what each statement did to "
    "memory, the autograd graph and the gradients.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    rich_markup_mode="rich",
)


def _version_callback(ctx: typer.Context, value: bool) -> None:
    if value:
        typer.echo(f"tcopy {__version__}")
        if "--verbose" in sys.argv[1:] or "-v" in sys.argv[1:] or ctx.params.get("verbose"):
            from tcopy_cli.process import confine

            typer.echo(f"python {sys.version.split()[0]} ({sys.executable})")
            for why in confine.missing():
                typer.echo(f"not available: {why}")
            typer.echo(f"confinement available here: {confine.available()}")
        raise typer.Exit()


@app.callback()
def _root(
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="With --version: also which protections a run gets here.")
    ] = False,
    version: Annotated[
        bool,
        typer.Option("--version", "-V", help="Show the version and exit.", callback=_version_callback, is_eager=True),
    ] = False,
) -> None:
    """Run a short PyTorch script step by step and see what each statement did to memory,
    the autograd graph and the gradients."""


def stderr() -> Console:
    """A console on stderr (NO_COLOR respected): in a terminal a long message wraps between words
    (the terminal would cut it anywhere); in a pipe or a file it stays one line."""
    return Console(
        stderr=True,
        highlight=False,
        soft_wrap=not sys.stderr.isatty(),
        no_color=bool(os.environ.get("NO_COLOR")) or None,
    )


def say(message: str) -> None:
    """A ``tcopy: ...`` line on stderr that does not end the command (made ``printable``)."""
    stderr().print(Text("tcopy: " + printable(message)))


def fail(message: str, code: int) -> NoReturn:
    """``tcopy: message`` on stderr, then exit with ``code`` (made ``printable``: a message may
    carry what the script or the worker made)."""
    stderr().print(Text("tcopy: ", style="bold red") + Text(printable(message)))
    raise typer.Exit(code)


def quiet_stdout() -> None:
    """After a closed pipe, point stdout at /dev/null so the final flush can't fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def internal_error(exc: BaseException) -> str:
    """The message for a bug in tcopy itself."""
    return f"internal error ({type(exc).__name__}: {exc}). This is a bug in tcopy; please report it with the script."


F = TypeVar("F", bound=Callable[..., None])


def guarded(command: F) -> F:
    """Turn anything a command raises into a short message and an exit status.

    UsageError exits 2; any other TcopyError and any unexpected exception exit 1;
    Ctrl-C exits 130; a closed stdout pipe exits 0 quietly. Typer's and click's own
    exits pass through.
    """

    @functools.wraps(command)
    def wrapper(*args: object, **kwargs: object) -> None:
        try:
            command(*args, **kwargs)
        except (typer.Exit, typer.Abort):
            raise
        except UsageError as exc:
            fail(exc.message, EXIT_USAGE)
        except TcopyError as exc:  # e.g. a limit hit between statements
            fail(exc.message, EXIT_SCRIPT)
        except KeyboardInterrupt:
            quiet_stdout()
            say("interrupted")
            raise typer.Exit(EXIT_INTERRUPT) from None
        except BrokenPipeError:
            quiet_stdout()
            raise typer.Exit(EXIT_OK) from None
        except Exception as exc:  # a bug in tcopy itself: short message, no traceback
            fail(internal_error(exc), EXIT_SCRIPT)

    return wrapper  # type: ignore[return-value]


def with_bare_flags(argv: list[str]) -> list[str]:
    """``--allow-read`` given without ``=PATH`` stands for the script's directory (as Deno reads its
    permission flags: a value only after ``=``)."""
    from tcopy_cli.cli.options import SCRIPT_DIRECTORY

    return [f"--allow-read={SCRIPT_DIRECTORY}" if arg == "--allow-read" else arg for arg in argv]


def main() -> None:
    """Console-script entry point."""
    sys.argv[1:] = with_bare_flags(sys.argv[1:])
    try:
        app()
    except KeyboardInterrupt:
        quiet_stdout()
        sys.exit(EXIT_INTERRUPT)
