"""What the worker gives up before it runs a script: new privileges, capabilities, outliving tcopy.

- ``no_new_privs``: no set-uid or file capability is gained through exec (Landlock and
  seccomp need it set first).
- ``drop_capabilities``: the effective, permitted, inheritable and ambient sets are
  emptied and every capability is dropped from the bounding set, so a worker started by
  root (or holding the capabilities a private user namespace gives) can't raise a hard
  rlimit, override file permissions or change its ids. The bounding set can be changed
  only with ``CAP_SETPCAP``: a normal user outside a user namespace holds nothing there to
  drop, and ``no_new_privs`` keeps it that way.
- ``die_with_parent``: ``PR_SET_PDEATHSIG`` = SIGKILL, so the worker ends when the
  process that started it does; the seccomp filter then refuses changing it.

Nothing here imports torch.
"""

from __future__ import annotations

import ctypes
import os
import signal

_PR_SET_PDEATHSIG = 1
_PR_SET_NO_NEW_PRIVS = 38
_PR_CAPBSET_DROP = 24
_PR_SET_SECUREBITS = 28
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
# SECBIT_NOROOT, SECBIT_NO_SETUID_FIXUP, SECBIT_KEEP_CAPS_LOCKED, SECBIT_NO_CAP_AMBIENT_RAISE
# and their locks: uid 0 means nothing special to the kernel any more.
_SECURE_BITS = 0x01 | 0x02 | 0x04 | 0x08 | 0x20 | 0x40 | 0x80


def _libc() -> ctypes.CDLL | None:
    from tcopy_cli.process.landlock import libc_handle as libc

    return libc()


def _prctl(libc: ctypes.CDLL, option: int, arg: int = 0) -> None:
    if libc.prctl(option, ctypes.c_ulong(arg), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def no_new_privs() -> None:
    """Set ``no_new_privs`` (OSError if the kernel refuses)."""
    libc = _libc()
    if libc is None:
        raise OSError(0, "not Linux")
    _prctl(libc, _PR_SET_NO_NEW_PRIVS, 1)


def die_with_parent(parent: int | None = None) -> None:
    """SIGKILL this process when its parent ends; end now if ``parent`` is given and already gone."""
    libc = _libc()
    if libc is None:
        return
    try:
        _prctl(libc, _PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        return
    if parent is not None and os.getppid() != parent:  # the parent died before the setting took
        os._exit(1)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _last_capability() -> int:
    try:
        with open("/proc/sys/kernel/cap_last_cap") as fh:
            return int(fh.read())
    except (OSError, ValueError):
        return 63


def drop_capabilities() -> bool:
    """Give up every capability for good; True if the bounding set could be emptied too."""
    libc = _libc()
    if libc is None:
        return False
    bounding = True
    try:
        _prctl(libc, _PR_SET_SECUREBITS, _SECURE_BITS)
    except OSError:
        pass  # needs CAP_SETPCAP: a normal user outside a user namespace has nothing to lock
    for cap in range(_last_capability() + 1):
        try:
            _prctl(libc, _PR_CAPBSET_DROP, cap)
        except OSError:
            bounding = False
            break
    try:
        _prctl(libc, _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL)
    except OSError:
        pass  # kernels before 4.3 have no ambient set
    header = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    if libc.capset(ctypes.byref(header), data) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"capset: {os.strerror(err)}")
    return bounding


def capabilities_held() -> int:
    """The effective capability set of this process (0 when none)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("CapEff:"):
                    return int(line.split()[1], 16)
    except (OSError, ValueError):
        pass
    return 0
