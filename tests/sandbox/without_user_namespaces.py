"""Run a command as on a system that refuses user namespaces (not a test).

Docker's default seccomp profile, ``kernel.unprivileged_userns_clone=0`` and Ubuntu's
AppArmor restriction all make ``unshare(CLONE_NEWUSER)`` fail; this installs a seccomp
filter that makes ``unshare`` and ``clone`` with a namespace flag fail with EPERM, then
runs the command, so the fallback (the seccomp rules alone) can be tested here:

    python tests/sandbox/without_user_namespaces.py python -m pytest tests/sandbox/test_wall.py
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
import sys

from tcopy_cli.process import libseccomp

CLONE_NEWUSER = 0x10000000


def main() -> int:
    def insn(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
        return struct.pack("=HBBI", code, jt, jf, k)

    unshare, clone = libseccomp.resolve("unshare"), libseccomp.resolve("clone")
    assert unshare is not None and clone is not None
    refuse = 0x00050000 | errno.EPERM
    prog = b"".join(
        [
            insn(0x20, 0),  # nr
            insn(0x15, unshare, jf=1),
            insn(0x06, refuse),
            insn(0x15, clone, jf=3),
            insn(0x20, 16),  # clone flags
            insn(0x45, CLONE_NEWUSER, jf=1),  # JSET
            insn(0x06, refuse),
            insn(0x06, 0x7FFF0000),
        ]
    )

    class Fprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(38, 1, 0, 0, 0) != 0 or libc.prctl(22, 2, ctypes.byref(Fprog(len(prog) // 8, prog)), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "could not install the filter")
    os.execvp(sys.argv[1], sys.argv[1:])
    return 1


if __name__ == "__main__":
    sys.exit(main())
