"""Where a script comes from: a path, stdin, -e CODE or a shipped example."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

from tcopy_cli.errors import ScriptRejected, UsageError
from tcopy_cli.limits import Limits


def example_source(name: str) -> str:
    """A shipped example's script; UsageError naming the others if there is none."""
    from tcopy_cli import examples

    try:
        return examples.source(name)
    except KeyError:
        from tcopy_cli.suggest import close_matches

        close = close_matches(name, examples.names(), n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise UsageError(f"no example named '{name}'{hint}; available: {', '.join(examples.names())}") from None


def read_source(
    script: Optional[str], code: Optional[str], limits: Limits, example: Optional[str] = None
) -> tuple[str, str]:
    """(source text, origin label) from --example, -e, a path, '-' or a piped stdin."""
    if example is not None:
        if script is not None or code is not None:
            raise UsageError("give only one of SCRIPT, -e CODE or --example NAME")
        return example_source(example), f"example:{example}"
    if code is not None:
        if script is not None:
            raise UsageError("give either a SCRIPT path or -e CODE, not both")
        return code, "<inline>"
    if script is None:
        if sys.stdin is None or sys.stdin.isatty():
            raise UsageError("no script given: pass a path, '-' for stdin, or -e CODE (see tcopy run --help)")
        script = "-"
    if script == "-":
        data = (
            sys.stdin.buffer.read(limits.max_script_bytes + 1)
            if hasattr(sys.stdin, "buffer")
            else sys.stdin.read().encode()
        )
        origin = "-"
    else:
        path = Path(script)
        if path.is_dir():
            raise UsageError(f"'{script}' is a directory, not a script")
        try:
            with path.open("rb") as fh:
                data = fh.read(limits.max_script_bytes + 1)
        except FileNotFoundError:
            raise UsageError(f"no such file: '{script}'") from None
        except OSError as exc:
            raise UsageError(f"can't read '{script}': {exc.strerror or exc}") from None
        origin = script
    from tcopy_cli.program import check_script_size

    check_script_size(len(data), limits)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ScriptRejected(f"the script is not valid UTF-8 text (byte {exc.start})", line, 1) from None
    return text, origin
