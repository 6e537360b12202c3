"""The keys --pause reads: where from, one press at a time, and what each one does."""

from __future__ import annotations

import os
import sys
from typing import Optional

NEXT, BACK, FIRST, LAST, QUIT = "next", "back", "first", "last", "quit"
RESIZE = "\x00resize"
"""What ``read_key`` gives when the terminal changed size (no key gives it)."""

KEYS: dict[str, str] = {
    "\r": NEXT, "\n": NEXT, " ": NEXT, "": NEXT,
    "\x1b[C": NEXT, "\x1bOC": NEXT, "\x1b[B": NEXT, "\x1bOB": NEXT, "\x1b[6~": NEXT,
    "\x1b[D": BACK, "\x1bOD": BACK, "\x1b[A": BACK, "\x1bOA": BACK, "\x1b[5~": BACK, "b": BACK, "B": BACK,
    "\x1b[H": FIRST, "\x1bOH": FIRST, "\x1b[1~": FIRST, "\x1b[7~": FIRST,
    "\x1b[F": LAST, "\x1bOF": LAST, "\x1b[4~": LAST, "\x1b[8~": LAST,
    "q": QUIT, "Q": QUIT,
}  # fmt: skip
"""What each key (or escape sequence) does at the --pause prompt; any other key is ignored."""


def key_source() -> Optional[int]:
    """Where --pause reads keys: standard input where it is a terminal, else the terminal itself
    (``/dev/tty``: ``cat demo.py | tcopy run - --pause`` pipes the script, the keys still come from
    the person at the terminal); None where there is no terminal to read."""
    if sys.stdin.isatty():
        return sys.stdin.fileno()
    try:
        fd = os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY)
    except OSError:
        return None
    if not os.isatty(fd):
        os.close(fd)
        return None
    return fd


class _Resized(Exception):
    """The terminal changed size while a key was awaited."""


def _resized(signum: int, frame: object) -> None:
    raise _Resized()


def read_key(fd: int) -> str:
    """One key press from the terminal ``fd``, without echo; an escape sequence is read whole.
    ``RESIZE`` where the terminal changed size first (the prompt is drawn again for its width)."""
    import select
    import signal
    import termios
    import tty

    old = termios.tcgetattr(fd)
    try:
        before = signal.signal(signal.SIGWINCH, _resized)
    except ValueError:  # not the main thread: no signals here
        before = None
    try:
        tty.setcbreak(fd)
        key = os.read(fd, 1)
        if key == b"\x1b":  # Esc alone, or the start of a sequence: take what follows at once
            while select.select([fd], [], [], 0.05)[0]:
                more = os.read(fd, 32)
                if not more:
                    break
                key += more
        return key.decode("utf-8", "replace")
    except _Resized:
        return RESIZE
    finally:
        if before is not None:
            signal.signal(signal.SIGWINCH, before)
        termios.tcsetattr(fd, termios.TCSADRAIN, old)
