"""The worker's seccomp filter: an allow-list of system calls, with argument checks.

Deny by default, as Docker's default profile, Chromium and nsjail do. The allowed calls
are the ones CPython, torch, NumPy and their thread pools were measured to make
(``tests/sandbox/survey_syscalls.py`` runs the test corpora, the shipped examples and
training loops under ``strace -f``: 44 distinct calls after ``import torch``), plus
the variants another C library or architecture uses for the same work (``statx`` for
``newfstatat``, ``ppoll`` for ``poll`` ...) and calls that only read this process's own
state. Every other call fails, and never kills the process:

- ``EPERM`` for the calls a script might try on purpose (they are named below:
  processes, sockets, other processes' memory, System V and POSIX IPC, namespaces,
  mounts, kernel modules, keyrings), ``EACCES`` for every change to a file and for
  opening one to write (as Landlock answers), so Python raises ``PermissionError``;
- ``ENOSYS`` for any call not named, so a newer C library that probes a new call (as
  glibc does with ``clone3``) falls back instead of failing.

Calls that are fine on the worker itself but not on other processes are allowed only
with argument 0 (the pid) equal to 0 or the worker's own pid: ``kill``, ``tgkill``,
``rt_sigqueueinfo``, ``rt_tgsigqueueinfo``, ``prlimit64``, ``sched_setaffinity``,
``sched_setscheduler``, ``sched_setparam``, ``sched_setattr``; ``getpriority`` and
``setpriority`` only for ``PRIO_PROCESS`` and that pid. ``clone`` only makes threads
(``CLONE_THREAD`` and no namespace flag); ``clone3`` reports ENOSYS (its flags are in
memory the filter can't read), so the C library falls back to ``clone``. ``prctl`` takes
only the options that read state, name a thread or a mapping, or tighten the process
(not ``PR_SET_PDEATHSIG``, ``PR_SET_DUMPABLE``, ``PR_SET_PTRACER``, ``PR_SET_MM``,
``PR_CAP_AMBIENT`` ...). ``fcntl`` refuses ``F_SETOWN``/``F_SETSIG`` (signals to another
process through an fd) and locks; ``ioctl`` refuses ``TIOCSTI`` and ``TIOCLINUX``
(typing into a terminal) and the file ioctls that change a file through a descriptor open
for reading (flags, attributes, fs-verity, encryption). On the CPU device ``open``/``openat`` refuse write access,
``O_CREAT`` and ``O_TRUNC`` with EACCES (Landlock refuses the same where it is present;
this holds where it is not), and ``mmap`` refuses shared anonymous memory and ``MAP_GROWSDOWN``, which ``RLIMIT_DATA``
would not count.

The program is written here (libseccomp 2.5's rules can't say "allow if argument 0 is
0 or this pid, otherwise EPERM" next to "ENOSYS for the rest"); the names are resolved
for the running architecture by libseccomp (``tcopy_cli.process.libseccomp``), so no
number is written per architecture. A call made through another ABI (``int 0x80`` on
x86-64) ends the process, and an x32 call on x86-64 fails with EPERM.

Nothing here imports torch.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import platform
import struct
import sys
import termios
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tcopy_cli.process import libseccomp

RET_KILL_PROCESS = 0x80000000
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000
EPERM = RET_ERRNO | errno.EPERM
EACCES = RET_ERRNO | errno.EACCES
ENOSYS = RET_ERRNO | errno.ENOSYS
AUDIT_ARCH_X86_64 = 0xC000003E
_X32_SYSCALL_BIT = 0x40000000


@dataclass(frozen=True)
class Condition:
    """Argument ``index`` equals ``value``: all 64 bits, or (``mask`` given) its low 32 bits and-ed with
    ``mask`` (int and flag arguments, whose high bits the kernel ignores)."""

    index: int
    value: int
    mask: int | None = None


def Eq(index: int, value: int) -> Condition:
    return Condition(index, value)


def Masked(index: int, mask: int, value: int) -> Condition:
    return Condition(index, value, mask)


@dataclass(frozen=True)
class Rule:
    """``action`` when every condition holds."""

    action: int
    conditions: tuple[Condition, ...] = ()


@dataclass(frozen=True)
class Call:
    """One system call: its rules in order (the first that holds decides), else ``otherwise``."""

    name: str
    otherwise: int = RET_ALLOW
    rules: tuple[Rule, ...] = ()


# --- the policy -----------------------------------------------------------------------

# Measured (strace of the corpora, examples and training loops), most frequent first: the
# filter tests them in this order.
MEASURED = (
    "futex", "newfstatat", "read", "lseek", "mmap", "munmap", "write", "close", "openat", "ioctl",
    "brk", "getdents64", "mprotect", "rt_sigaction", "setitimer", "getrandom", "rt_sigprocmask",
    "sched_getaffinity", "getcwd", "sched_setaffinity", "clock_nanosleep", "fstat", "mbind", "uname",
    "pread64", "readlink", "rseq", "set_robust_list", "gettid", "epoll_create1", "prlimit64", "alarm",
    "madvise", "getpid", "getuid", "clone", "exit", "exit_group", "open", "mkdir", "unlink", "socket",
    "connect", "clone3",
)  # fmt: skip

# The same work done another way (other C libraries, architectures, Python versions), and
# calls that only read or change this process's own state.
ALSO_ALLOWED = (
    # time and sleeping (the vDSO's fallbacks), this process's scheduling
    "clock_gettime", "clock_getres", "gettimeofday", "time", "nanosleep", "sched_yield", "getcpu",
    "sched_getparam", "sched_getscheduler", "sched_getattr", "sched_get_priority_max",
    "sched_get_priority_min", "getitimer",
    # files already open, or opened read-only (Landlock decides which)
    "stat", "lstat", "statx", "fstatfs", "statfs", "access", "faccessat", "faccessat2", "readlinkat",
    "getdents", "readv", "writev", "dup", "dup2", "dup3", "pipe", "pipe2", "eventfd2", "poll", "ppoll",
    "select", "pselect6", "epoll_create", "epoll_ctl", "epoll_wait", "epoll_pwait", "epoll_pwait2",
    "close_range", "chdir", "fchdir", "umask",
    # memory of this process (glibc's realloc moves large blocks with mremap; NUMA-aware pools)
    "mremap", "get_mempolicy", "set_mempolicy", "membarrier", "map_shadow_stack", "mseal",
    # threads, signals and identity of this process
    "set_tid_address", "arch_prctl", "rt_sigreturn", "rt_sigsuspend", "rt_sigtimedwait", "rt_sigpending",
    "sigaltstack", "restart_syscall", "getppid", "geteuid", "getgid", "getegid", "getgroups",
    "getresuid", "getresgid", "getpgrp", "getpgid", "getsid", "getrusage", "times", "sysinfo", "capget",
    "getrlimit", "setrlimit",
)  # fmt: skip

# Refused with EPERM: what a script may try on purpose. Anything not named anywhere here
# gets ENOSYS.
REFUSED = (
    # other processes: start, trace, read or write their memory, signal them, compare them
    "fork", "vfork", "execve", "execveat", "ptrace", "process_vm_readv", "process_vm_writev",
    "process_madvise", "process_mrelease", "kcmp", "pidfd_open", "pidfd_send_signal", "pidfd_getfd",
    "tkill", "get_robust_list", "migrate_pages", "move_pages", "ioprio_set", "ioprio_get",
    "setsid", "setpgid",
    # the network and sockets of every family
    "socketpair", "bind", "listen", "accept", "accept4", "sendto", "recvfrom", "sendmsg", "recvmsg",
    "sendmmsg", "recvmmsg", "getsockopt", "setsockopt", "getsockname", "getpeername", "shutdown",
    # System V and POSIX IPC, shared and secret memory
    "shmget", "shmat", "shmdt", "shmctl", "msgget", "msgsnd", "msgrcv", "msgctl", "semget", "semop",
    "semtimedop", "semctl", "ipc", "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify",
    "mq_getsetattr", "memfd_create", "memfd_secret", "mlock", "mlock2", "mlockall", "munlock",
    "munlockall",
    "inotify_init", "inotify_init1", "inotify_add_watch", "inotify_rm_watch", "fanotify_init", "fanotify_mark",
    "name_to_handle_at", "open_by_handle_at", "openat2", "flock",
    "io_setup", "io_submit", "io_destroy", "io_getevents", "io_pgetevents", "io_cancel",
    "io_uring_setup", "io_uring_enter", "io_uring_register", "splice", "tee", "vmsplice", "sendfile",
    "copy_file_range",
    # namespaces, mounts, the kernel, identity and privileges
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "mount_setattr", "open_tree",
    "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "bpf", "perf_event_open", "userfaultfd",
    "keyctl", "add_key", "request_key", "setuid", "setgid", "setreuid", "setregid", "setresuid",
    "setresgid", "setfsuid", "setfsgid", "setgroups", "capset", "personality", "seccomp",
    "landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self", "sethostname",
    "setdomainname", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "reboot",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "swapon", "swapoff",
    "acct", "quotactl", "quotactl_fd", "syslog", "vhangup", "iopl", "ioperm", "modify_ldt",
    "lookup_dcookie", "sync", "syncfs",
)  # fmt: skip

# Refused with EACCES, as Landlock refuses them (so a refused write reads "Permission denied"
# whether or not Landlock is there): every change to a file or directory.
FILE_CHANGES = (
    "mkdir", "mkdirat", "rmdir", "unlink", "unlinkat", "rename", "renameat", "renameat2", "link", "linkat",
    "symlink", "symlinkat", "chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown", "lchown",
    "fchownat", "truncate", "ftruncate", "fallocate", "creat", "mknod", "mknodat", "utime", "utimes",
    "utimensat", "futimesat", "setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr",
    "fremovexattr",
)  # fmt: skip

# prctl options allowed (linux/prctl.h): reading state, naming the thread or a mapping,
# the timer slack, transparent huge pages, speculation and shadow-stack controls, the
# AArch64 vector lengths and pointer tags; PR_SET_NO_NEW_PRIVS is in force already.
PRCTL_ALLOWED = (
    2, 3, 7, 15, 16, 21, 23, 27, 29, 30, 34, 37, 39, 40, 41, 42, 46, 50, 51, 52, 53, 54, 55, 56, 58,
    63, 64, 65, 66, 68, 74, 75, 76, 0x53564D41, 0x41555856,
)  # fmt: skip

# fcntl commands allowed: not F_SETOWN/F_SETOWN_EX/F_SETSIG (a signal to another process
# when the fd is ready), not locks or leases (they hold other processes up), F_NOTIFY, seals.
FCNTL_ALLOWED = tuple(
    getattr(fcntl, name, default)
    for name, default in (
        ("F_DUPFD", 0),
        ("F_GETFD", 1),
        ("F_SETFD", 2),
        ("F_GETFL", 3),
        ("F_SETFL", 4),
        ("F_GETLK", 5),
        ("F_GETOWN", 9),
        ("F_GETSIG", 11),
        ("F_GETOWN_EX", 16),
        ("F_OFD_GETLK", 36),
        ("F_DUPFD_CLOEXEC", 1030),
        ("F_GETPIPE_SZ", 1032),
        ("F_GET_SEALS", 1034),
    )
)
IOCTL_REFUSED = (
    getattr(termios, "TIOCSTI", 0x5412),  # typing into a terminal
    getattr(termios, "TIOCLINUX", 0x541C),
    # Changes to a file through a descriptor opened for reading (its owner may make them):
    0x40086602, 0x40046602,  # FS_IOC_SETFLAGS (the 32-bit value too): append-only, immutable, sync ...
    0x401C5820,  # FS_IOC_FSSETXATTR
    0x40087602, 0x40047602,  # FS_IOC_SETVERSION
    0x40806685,  # FS_IOC_ENABLE_VERITY: makes the file read-only for good
    0x800C6613, 0xC0506617,  # FS_IOC_SET_ENCRYPTION_POLICY, FS_IOC_ADD_ENCRYPTION_KEY
)  # fmt: skip

CLONE_THREAD = 0x00010000
CLONE_NAMESPACES = 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000 | 0x00020000 | 0x80
"""CLONE_NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET, NEWNS, NEWTIME."""
MAP_TYPE = 0x0F
MAP_SHARED = 0x01
MAP_SHARED_VALIDATE = 0x03
MAP_ANONYMOUS = 0x20
MAP_GROWSDOWN = 0x0100
"""A mapping the kernel counts as stack: RLIMIT_DATA does not bound it."""
PRIO_PROCESS = 0
OWN_PID_ONLY = (
    "kill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "prlimit64", "sched_setaffinity",
    "sched_setscheduler", "sched_setparam", "sched_setattr",
)  # fmt: skip
_MACHINE = platform.machine()
CLONE_FLAGS_ARG = 1 if _MACHINE.startswith("s390") else 0
"""s390 passes clone's stack first and its flags second; every other architecture flags first."""
MMAP_FLAGS_CHECKED = _MACHINE in ("x86_64", "aarch64", "riscv64", "ppc64le", "ppc64", "loongarch64")
"""Where mmap takes its flags as argument 3 (s390 passes a pointer to a struct): elsewhere mmap is not checked."""
GPU_ALSO = ("memfd_create", "mlock", "munlock", "mlock2")
"""Allowed with a GPU device (drivers pin host memory and share it); not tested on a GPU here."""


def policy(pid: int, gpu: bool = False) -> list[Call]:
    """Every named call and what the filter does with it, for a worker whose pid is ``pid``."""
    own = (Rule(RET_ALLOW, (Eq(0, 0),)), Rule(RET_ALLOW, (Eq(0, pid),)))
    write_flags = os.O_CREAT | os.O_TRUNC | (0 if gpu else os.O_WRONLY | os.O_RDWR)
    read_only = (Rule(RET_ALLOW, (Masked(1, write_flags, 0),)),)
    thread_flags = Masked(CLONE_FLAGS_ARG, CLONE_THREAD | CLONE_NAMESPACES, CLONE_THREAD)
    priority = tuple(Rule(RET_ALLOW, (Eq(0, PRIO_PROCESS), Eq(1, who))) for who in (0, pid))
    special: dict[str, Call] = {
        "clone": Call("clone", EPERM, (Rule(RET_ALLOW, (thread_flags,)),)),
        "clone3": Call("clone3", ENOSYS),
        "prctl": Call("prctl", EPERM, tuple(Rule(RET_ALLOW, (Masked(0, 0xFFFFFFFF, o),)) for o in PRCTL_ALLOWED)),
        "fcntl": Call("fcntl", EPERM, tuple(Rule(RET_ALLOW, (Masked(1, 0xFFFFFFFF, c),)) for c in FCNTL_ALLOWED)),
        "ioctl": Call("ioctl", RET_ALLOW, tuple(Rule(EPERM, (Masked(1, 0xFFFFFFFF, c),)) for c in IOCTL_REFUSED)),
        "openat": Call("openat", EACCES, tuple(Rule(r.action, (Masked(2, write_flags, 0),)) for r in read_only)),
        "open": Call("open", EACCES, read_only),
        "getpriority": Call("getpriority", EPERM, priority),
        "setpriority": Call("setpriority", EPERM, priority),
        **{name: Call(name, EPERM, own) for name in OWN_PID_ONLY},
        # socket() is measured (glibc asks nscd, then reads the files); connect() only follows it
        "socket": Call("socket", EPERM),
        "connect": Call("connect", EPERM),
        **{name: Call(name, EACCES) for name in FILE_CHANGES},
    }  # fmt: skip
    if not gpu and MMAP_FLAGS_CHECKED:
        shared_anonymous = (MAP_SHARED | MAP_ANONYMOUS, MAP_SHARED_VALIDATE | MAP_ANONYMOUS)
        refused = tuple(Rule(EPERM, (Masked(3, MAP_TYPE | MAP_ANONYMOUS, v),)) for v in shared_anonymous)
        special["mmap"] = Call("mmap", RET_ALLOW, (*refused, Rule(EPERM, (Masked(3, MAP_GROWSDOWN, MAP_GROWSDOWN),))))
    calls: list[Call] = []
    seen: set[str] = set()
    for name in (*MEASURED, "prctl", "fcntl", "getpriority", "setpriority", *OWN_PID_ONLY, *ALSO_ALLOWED):
        if name not in seen:
            seen.add(name)
            calls.append(special.get(name, Call(name)))
    for name in (*FILE_CHANGES, *REFUSED):
        if name not in seen:
            seen.add(name)
            calls.append(special.get(name, Call(name, RET_ALLOW if gpu and name in GPU_ALSO else EPERM)))
    return calls


# --- the BPF program ------------------------------------------------------------------

_LD_W_ABS = 0x20
_ALU_AND_K = 0x54
_JA = 0x05
_JEQ_K = 0x15
_JGE_K = 0x35
_RET_K = 0x06


def _insn(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k & 0xFFFFFFFF)


def _arg_offsets(index: int) -> tuple[int, int]:
    """Offsets of an argument's low and high 32-bit words in ``struct seccomp_data``."""
    base = 16 + 8 * index
    return (base, base + 4) if sys.byteorder == "little" else (base + 4, base)


def _rule(rule: Rule) -> list[bytes]:
    """A rule's checks, each jumping past the rule's end when it fails, then its action."""
    steps: list[tuple[int, int]] = []  # (opcode, k)
    for cond in rule.conditions:
        low, high = _arg_offsets(cond.index)
        if cond.mask is None:
            steps += [(_LD_W_ABS, low), (_JEQ_K, cond.value), (_LD_W_ABS, high), (_JEQ_K, cond.value >> 32)]
        else:
            steps += [(_LD_W_ABS, low), (_ALU_AND_K, cond.mask), (_JEQ_K, cond.value)]
    length = len(steps) + 1
    out = [_insn(op, k, jf=length - i - 1 if op == _JEQ_K else 0) for i, (op, k) in enumerate(steps)]
    out.append(_insn(_RET_K, rule.action))
    return out


def program(calls: Sequence[Call], arch: int, numbers: dict[str, int]) -> bytes:
    """The filter for ``arch``: ``struct sock_filter`` records, 8 bytes each."""
    prog = [
        _insn(_LD_W_ABS, 4),  # seccomp_data.arch
        _insn(_JEQ_K, arch, jt=1),
        _insn(_RET_K, RET_KILL_PROCESS),  # another ABI's numbers mean other calls
        _insn(_LD_W_ABS, 0),  # seccomp_data.nr
    ]
    if arch == AUDIT_ARCH_X86_64:  # x32 calls share the ABI token, with this bit set
        prog += [_insn(_JGE_K, _X32_SYSCALL_BIT, jf=1), _insn(_RET_K, EPERM)]
    for call in calls:
        nr = numbers.get(call.name)
        if nr is None:
            continue
        if not call.rules:
            prog += [_insn(_JEQ_K, nr, jf=1), _insn(_RET_K, call.otherwise)]
            continue
        body = [insn for rule in call.rules for insn in _rule(rule)]
        body.append(_insn(_RET_K, call.otherwise))
        # every path through the body returns, so the next test still has the number loaded
        prog += [_insn(_JEQ_K, nr, jt=1), _insn(_JA, len(body)), *body]
    prog.append(_insn(_RET_K, ENOSYS))
    return b"".join(prog)


def resolved(calls: Iterable[Call]) -> dict[str, int]:
    """The numbers of ``calls`` on this architecture (calls it lacks are left out)."""
    out: dict[str, int] = {}
    for call in calls:
        nr = libseccomp.resolve(call.name)
        if nr is not None:
            out[call.name] = nr
    return out


def unavailable() -> str:
    """Why no filter can be loaded here ("" if one can)."""
    if not sys.platform.startswith("linux"):
        return "not Linux"
    if libseccomp.library() is None:
        return libseccomp.load_error()
    if libseccomp.resolve("seccomp") is None or libseccomp.native_arch() is None:
        return "libseccomp does not know this architecture"
    return ""


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


_SECCOMP_SET_MODE_FILTER = 1
_SECCOMP_FILTER_FLAG_TSYNC = 1


def install(pid: int, gpu: bool = False) -> int:
    """Load the filter on every thread of this process; the number of calls it names.

    ``no_new_privs`` must be set already. OSError if the kernel refuses.
    """
    why = unavailable()
    nr = libseccomp.resolve("seccomp")
    if why or nr is None:
        raise OSError(errno.ENOSYS, why)
    calls = policy(pid, gpu)
    numbers = resolved(calls)
    arch = libseccomp.native_arch()
    assert arch is not None
    code = program(calls, arch, numbers)
    buf = ctypes.create_string_buffer(code, len(code))
    prog = _SockFprog(len(code) // 8, ctypes.cast(buf, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    result = libc.syscall(
        ctypes.c_long(nr),
        ctypes.c_uint(_SECCOMP_SET_MODE_FILTER),
        ctypes.c_uint(_SECCOMP_FILTER_FLAG_TSYNC),
        ctypes.byref(prog),
    )
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"seccomp: {os.strerror(err)}")
    if result != 0:  # TSYNC: the id of a thread that could not take the filter
        raise OSError(errno.EBUSY, f"thread {result} could not take the seccomp filter")
    return len(numbers)
