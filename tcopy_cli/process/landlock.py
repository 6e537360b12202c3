"""Landlock for the worker (Linux 5.13+): read-only access beneath the places Python and torch load from.

Nothing here imports torch. ``confine()`` is called by the worker before it imports
torch or NumPy, so every thread those libraries start inherits the restrictions
(``landlock_restrict_self`` only restricts the calling thread and the threads it
starts afterwards; the seccomp filter is installed with TSYNC on every thread).

Every file-system access right the kernel's ABI knows is handled; the only rules grant
reading (files and directory listings) beneath the directories Python, NumPy and torch
load from. So no file can be written, created, removed, renamed, truncated or executed
anywhere. ABI 4+: TCP bind and connect are handled with no rule, so both are refused.
ABI 6+: signals to processes outside the worker and connections to abstract UNIX
sockets outside it are refused. ``no_new_privs`` must be set first.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Iterable

# --- Landlock ------------------------------------------------------------------------

_SYS_LANDLOCK_CREATE_RULESET = 444  # the same number on every architecture
_SYS_LANDLOCK_ADD_RULE = 445
_SYS_LANDLOCK_RESTRICT_SELF = 446
_LANDLOCK_CREATE_RULESET_VERSION = 1
_LANDLOCK_RULE_PATH_BENEATH = 1

# Landlock's filesystem access rights, bit i in the kernel's order (uapi/linux/landlock.h):
# ABI 1 has EXECUTE .. MAKE_SYM, ABI 2 adds REFER, ABI 3 TRUNCATE, ABI 5 IOCTL_DEV.
(
    FS_EXECUTE, FS_WRITE_FILE, FS_READ_FILE, FS_READ_DIR, FS_REMOVE_DIR, FS_REMOVE_FILE,
    FS_MAKE_CHAR, FS_MAKE_DIR, FS_MAKE_REG, FS_MAKE_SOCK, FS_MAKE_FIFO, FS_MAKE_BLOCK,
    FS_MAKE_SYM, FS_REFER, FS_TRUNCATE, FS_IOCTL_DEV,
) = (1 << bit for bit in range(16))  # fmt: skip
NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1  # ABI 6

_FS_ABI1 = (1 << 13) - 1  # EXECUTE .. MAKE_SYM


def landlock_fs_rights(abi: int) -> int:
    """Every file-system access right that Landlock ABI ``abi`` can handle."""
    rights = _FS_ABI1
    if abi >= 2:
        rights |= FS_REFER
    if abi >= 3:
        rights |= FS_TRUNCATE
    if abi >= 5:
        rights |= FS_IOCTL_DEV
    return rights


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def libc_handle() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def _syscall(libc: ctypes.CDLL, number: int, *args: object) -> int:
    fn = libc.syscall
    fn.restype = ctypes.c_long
    result = int(fn(ctypes.c_long(number), *args))
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return result


def landlock_abi() -> int:
    """The Landlock ABI version of the running kernel; 0 if Landlock is unavailable."""
    libc = libc_handle()
    if libc is None:
        return 0
    try:
        return _syscall(libc, _SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    except OSError:
        return 0


def read_paths(extra: Iterable[str] = ()) -> list[str]:
    """Directories and files the worker may read after confinement.

    What the interpreter, the C library loader, NumPy and torch open while importing
    and running: the Python installation and import path, system library directories,
    a few /etc files, the process's own /proc entry and CPU facts in /proc and /sys.
    """
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cwd = os.getcwd()
    candidates = [
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        sys.base_exec_prefix,
        package_root,
        # the current directory is on the path of `python -m` before 3.11's PYTHONSAFEPATH
        *(p for p in sys.path if os.path.abspath(p or ".") != cwd),
        *os.environ.get("LD_LIBRARY_PATH", "").split(":"),
        "/usr/lib",
        "/usr/lib64",
        "/usr/lib32",
        "/usr/local/lib",
        "/lib",
        "/lib64",
        "/lib32",
        "/usr/share/zoneinfo",
        "/etc/ld.so.cache",
        "/etc/ld.so.conf",
        "/etc/ld.so.conf.d",
        "/etc/localtime",
        "/etc/nsswitch.conf",
        _own_proc(),
        "/proc/cpuinfo",
        "/proc/meminfo",
        "/proc/stat",
        "/proc/sys/kernel",
        "/proc/sys/vm",
        "/sys/devices/system/cpu",
        "/sys/devices/system/node",
        "/sys/fs/cgroup",
        "/dev/null",
        "/dev/urandom",
        "/dev/random",
        *extra,
    ]
    seen: list[str] = []
    for path in candidates:
        if not path:
            continue
        path = os.path.abspath(path)
        if os.path.exists(path) and path not in seen:
            seen.append(path)
    return seen


def _own_proc() -> str:
    """This process's directory in /proc (in a PID namespace ``getpid()`` is not the id /proc uses)."""
    try:
        return os.path.join("/proc", os.readlink("/proc/self"))
    except OSError:
        return f"/proc/{os.getpid()}"


def device_paths() -> list[str]:
    """Device nodes a GPU driver opens read-write (granted only for a non-CPU device)."""
    out: list[str] = []
    try:
        names = os.listdir("/dev")
    except OSError:
        return out
    for name in sorted(names):
        if name.startswith(("nvidia", "kfd")) or name == "dri":
            out.append(os.path.join("/dev", name))
    out += [p for p in ("/proc/driver/nvidia", "/sys/bus/pci", "/sys/devices") if os.path.exists(p)]
    return out


def apply(libc: ctypes.CDLL, abi: int, readable: list[str], device_rw: list[str]) -> None:
    attr = _RulesetAttr(landlock_fs_rights(abi), 0, 0)
    size = 8
    if abi >= 4:
        attr.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP
        size = 16
    if abi >= 6:
        attr.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
        size = 24
    ruleset = _syscall(
        libc, _SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0)
    )
    try:
        read = FS_READ_FILE | FS_READ_DIR
        device = read | FS_WRITE_FILE | (FS_IOCTL_DEV if abi >= 5 else 0)
        for paths, rights in ((readable, read), (device_rw, device)):
            for path in paths:
                try:
                    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
                except OSError:
                    continue
                try:
                    allowed = rights if os.path.isdir(path) else rights & ~FS_READ_DIR
                    rule = _PathBeneathAttr(allowed, fd)
                    _syscall(
                        libc,
                        _SYS_LANDLOCK_ADD_RULE,
                        ctypes.c_int(ruleset),
                        ctypes.c_int(_LANDLOCK_RULE_PATH_BENEATH),
                        ctypes.byref(rule),
                        ctypes.c_uint32(0),
                    )
                finally:
                    os.close(fd)
        _syscall(libc, _SYS_LANDLOCK_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0))
    finally:
        os.close(ruleset)
