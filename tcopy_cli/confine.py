"""Kernel confinement of the worker process (Linux): Landlock, seccomp, no_new_privs.

Nothing here imports torch. ``confine()`` is called by the worker before it imports
torch or NumPy, so every thread those libraries start inherits the restrictions
(``landlock_restrict_self`` only restricts the calling thread and the threads it
starts afterwards; the seccomp filter is installed with TSYNC on every thread).

What it applies, each only where the kernel offers it:

- ``no_new_privs``: no set-uid/file-capability gain through exec (needed by both).
- **Landlock**: every file-system access right the kernel's ABI knows is handled; the
  only rules grant reading (files and directory listings) beneath the directories
  Python, NumPy and torch load from. So no file can be written, created, removed,
  renamed, truncated or executed anywhere. ABI 4+: TCP bind and connect are handled
  with no rule, so both are refused. ABI 6+: signals to processes outside the worker
  and connections to abstract UNIX sockets outside it are refused.
- **seccomp** (a BPF program built here, no library needed): ``execve``/``execveat``,
  ``socket``/``socketpair``, ``fork``/``vfork``, ``clone`` without ``CLONE_THREAD``,
  ``ptrace`` and cross-process memory calls, signals to any other process, namespaces,
  mounts, ``bpf``, ``perf_event_open``, ``userfaultfd``, ``io_uring`` and keyrings fail
  with EPERM. ``clone3`` fails with ENOSYS (BPF can't read its flags), so the C
  library falls back to ``clone`` for threads. A system call made through a foreign
  ABI (32-bit ``int 0x80``) ends the process.

The run works without any of them; ``describe()`` names what is active.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field

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


def _libc() -> ctypes.CDLL | None:
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
    libc = _libc()
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
        f"/proc/{os.getpid()}",
        "/proc/cpuinfo",
        "/proc/meminfo",
        "/proc/stat",
        "/proc/sys/kernel",
        "/proc/sys/vm",
        "/sys/devices/system/cpu",
        "/sys/devices/system/node",
        "/sys/fs/cgroup",
        "/dev/null",
        "/dev/zero",
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


def _apply_landlock(libc: ctypes.CDLL, abi: int, readable: list[str], device_rw: list[str]) -> None:
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


# --- seccomp -------------------------------------------------------------------------

_PR_SET_NO_NEW_PRIVS = 38
_PR_GET_SECCOMP = 21
_SECCOMP_SET_MODE_FILTER = 1
_SECCOMP_FILTER_FLAG_TSYNC = 1
_RET_KILL_PROCESS = 0x80000000
_RET_ERRNO = 0x00050000
_RET_ALLOW = 0x7FFF0000
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06
_CLONE_THREAD = 0x00010000
_X32_SYSCALL_BIT = 0x40000000


@dataclass(frozen=True)
class _Arch:
    audit: int
    seccomp: int
    denied: dict[str, int]
    clone: int
    signal_to_pid: tuple[int, ...]
    """kill, tgkill, rt_sigqueueinfo, rt_tgsigqueueinfo: allowed only with arg 0 = own pid."""
    x32: bool = False
    enosys: tuple[int, ...] = field(default=(435,))  # clone3


_COMMON = {  # numbers shared by every architecture (added in 5.x kernels)
    "pidfd_send_signal": 424,
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "open_tree": 428,
    "move_mount": 429,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "pidfd_open": 434,
    "pidfd_getfd": 438,
    "mount_setattr": 442,
}

# Denied system calls: name -> (x86_64 number, aarch64 number); None where the
# architecture has no such call (aarch64 has no fork/vfork: glibc uses clone).
_DENIED: dict[str, tuple[int, int | None]] = {
    "socket": (41, 198),
    "socketpair": (53, 199),
    "fork": (57, None),
    "vfork": (58, None),
    "execve": (59, 221),
    "ptrace": (101, 117),
    "tkill": (200, 130),
    "chroot": (161, 51),
    "pivot_root": (155, 41),
    "mount": (165, 40),
    "umount2": (166, 39),
    "add_key": (248, 217),
    "request_key": (249, 218),
    "keyctl": (250, 219),
    "unshare": (272, 97),
    "perf_event_open": (298, 241),
    "setns": (308, 268),
    "process_vm_readv": (310, 270),
    "process_vm_writev": (311, 271),
    "kcmp": (312, 272),
    "bpf": (321, 280),
    "execveat": (322, 281),
    "userfaultfd": (323, 282),
}


def _denied(column: int) -> dict[str, int]:
    table = {name: numbers[column] for name, numbers in _DENIED.items()}
    return {name: nr for name, nr in table.items() if nr is not None} | _COMMON


_ARCHES = {
    name: _Arch(audit=audit, seccomp=seccomp, denied=_denied(column), clone=clone, signal_to_pid=signals, x32=x32)
    for column, (name, audit, seccomp, clone, signals, x32) in enumerate(
        (
            # name, audit arch, seccomp, clone, (kill, tgkill, rt_sigqueueinfo, rt_tgsigqueueinfo), x32 ABI
            ("x86_64", 0xC000003E, 317, 56, (62, 234, 129, 297), True),
            ("aarch64", 0xC00000B7, 277, 220, (129, 131, 138, 240), False),
        )
    )
}


def _arch() -> _Arch | None:
    return _ARCHES.get(platform.machine()) if sys.platform.startswith("linux") else None


def _stmt(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def seccomp_program(arch: _Arch, pid: int) -> bytes:
    """The BPF filter: a list of ``struct sock_filter`` (8 bytes each)."""
    eperm = _RET_ERRNO | errno.EPERM
    prog = [
        _stmt(_LD_W_ABS, 4),  # seccomp_data.arch
        _stmt(_JEQ_K, arch.audit, jt=1),
        _stmt(_RET_K, _RET_KILL_PROCESS),
        _stmt(_LD_W_ABS, 0),  # seccomp_data.nr
    ]
    if arch.x32:
        prog += [_stmt(_JGE_K, _X32_SYSCALL_BIT, jf=1), _stmt(_RET_K, eperm)]
    for nr in sorted(arch.denied.values()):
        prog += [_stmt(_JEQ_K, nr, jf=1), _stmt(_RET_K, eperm)]
    for nr in arch.enosys:
        prog += [_stmt(_JEQ_K, nr, jf=1), _stmt(_RET_K, _RET_ERRNO | errno.ENOSYS)]
    # clone: only threads (CLONE_THREAD in the flags, argument 0).
    prog += [
        _stmt(_JEQ_K, arch.clone, jf=4),
        _stmt(_LD_W_ABS, 16),  # low 32 bits of args[0]
        _stmt(_JSET_K, _CLONE_THREAD, jt=1),
        _stmt(_RET_K, eperm),
        _stmt(_RET_K, _RET_ALLOW),
    ]
    # Signals: only to this process (the kernel reads the pid as a 32-bit int).
    for nr in arch.signal_to_pid:
        prog += [
            _stmt(_JEQ_K, nr, jf=4),
            _stmt(_LD_W_ABS, 16),
            _stmt(_JEQ_K, pid, jt=1),
            _stmt(_RET_K, eperm),
            _stmt(_RET_K, _RET_ALLOW),
        ]
    prog.append(_stmt(_RET_K, _RET_ALLOW))
    return b"".join(prog)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _no_new_privs(libc: ctypes.CDLL) -> None:
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def _apply_seccomp(libc: ctypes.CDLL, arch: _Arch) -> None:
    code = seccomp_program(arch, os.getpid())
    buf = ctypes.create_string_buffer(code, len(code))
    prog = _SockFprog(len(code) // 8, ctypes.cast(buf, ctypes.c_void_p))
    result = _syscall(
        libc,
        arch.seccomp,
        ctypes.c_uint(_SECCOMP_SET_MODE_FILTER),
        ctypes.c_uint(_SECCOMP_FILTER_FLAG_TSYNC),
        ctypes.byref(prog),
    )
    if result != 0:  # TSYNC: the id of a thread that could not be synchronised
        raise OSError(errno.EBUSY, f"thread {result} could not take the seccomp filter")


def seccomp_available() -> bool:
    """Whether this kernel accepts seccomp filters and this architecture has a table here."""
    libc = _libc()
    if libc is None or _arch() is None:
        return False
    return int(libc.prctl(_PR_GET_SECCOMP, 0, 0, 0, 0)) >= 0


# --- the worker's entry points --------------------------------------------------------


@dataclass
class Confinement:
    """What ``confine`` managed to apply, and why a part is missing."""

    landlock_abi: int = 0
    seccomp: bool = False
    rlimits: bool = False
    problems: list[str] = field(default_factory=list)

    def describe(self) -> str:
        """``landlock+seccomp+rlimits``, a subset of it, or ``none``."""
        parts = [
            name
            for name, active in (
                ("landlock", self.landlock_abi > 0),
                ("seccomp", self.seccomp),
                ("rlimits", self.rlimits),
            )
            if active
        ]
        return "+".join(parts) or "none"


def rlimits_in_place() -> bool:
    """Whether the supervisor's limits hold in this process (no file may be written, no core)."""
    try:
        import resource
    except ImportError:  # not on POSIX
        return False
    return resource.getrlimit(resource.RLIMIT_FSIZE)[0] == 0 and resource.getrlimit(resource.RLIMIT_CORE)[0] == 0


def confine(device: str = "cpu", readable: Iterable[str] = ()) -> Confinement:
    """Confine this process for the rest of its life, as far as the kernel allows.

    ``device`` other than ``cpu`` keeps the GPU driver's device nodes writable.
    """
    result = Confinement(rlimits=rlimits_in_place())
    libc = _libc()
    if libc is None:
        result.problems.append("not Linux: no Landlock or seccomp")
        return result
    try:
        _no_new_privs(libc)
    except OSError as exc:
        result.problems.append(f"no_new_privs: {exc}")
        return result
    abi = landlock_abi()
    if abi <= 0:
        result.problems.append("Landlock is not available in this kernel (5.13+ with the landlock LSM enabled)")
    else:
        try:
            _apply_landlock(libc, abi, read_paths(readable), device_paths() if device != "cpu" else [])
            result.landlock_abi = abi
        except OSError as exc:
            result.problems.append(f"Landlock: {exc}")
    arch = _arch()
    if arch is None:
        result.problems.append(f"seccomp: no system call table for {platform.machine()}")
    else:
        try:
            _apply_seccomp(libc, arch)
            result.seccomp = True
        except OSError as exc:
            result.problems.append(f"seccomp: {exc}")
    return result


def available() -> str:
    """What a run on this machine would get (for ``tcopy --version --verbose``), e.g.
    ``landlock (ABI 7, with TCP and signal scoping)+seccomp+rlimits``."""
    parts: list[str] = []
    abi = landlock_abi()
    if abi > 0:
        extras = [name for name, since in (("TCP", 4), ("signal scoping", 6)) if abi >= since]
        parts.append(f"landlock (ABI {abi}" + (f", with {' and '.join(extras)})" if extras else ")"))
    if seccomp_available():
        parts.append("seccomp")
    try:
        import resource  # noqa: F401

        parts.append("rlimits")
    except ImportError:
        pass
    return "+".join(parts) or "none"
