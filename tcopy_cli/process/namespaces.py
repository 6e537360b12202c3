"""Private namespaces for the worker, where the kernel lets an unprivileged process make them.

bubblewrap's approach: a new user namespace (the worker keeps its own uid and gid,
mapped one to one) that owns a new IPC namespace (System V shared memory, semaphores,
message queues and POSIX message queues of the user's other processes are out of
reach, and what the worker makes goes when it ends), a new network namespace (no
interface but a loopback that is down), a mount namespace and a new PID namespace (no other process can be
named by its pid; the kernel ends every process in it when its first process ends).

In its own mount namespace the worker mounts the PID namespace's /proc over the machine's,
so other processes have no /proc entry there (their environment, command line, maps),
with or without Landlock; nothing else is mounted or hidden.

A new PID namespace takes effect for the children of the process that makes it, so the
worker forks twice before it imports torch, as bubblewrap does: the process tcopy
started waits outside, the first child is the namespace's init (pid 1: it only waits
for the worker and passes on how it ended), the second is the worker (pid 2, where
signals behave as in any process). The waiting processes end the way the worker ended
(its exit status, or the signal that killed it), so tcopy's report is the same.

Inside its own user namespace the worker sets the namespace's ``pid_max`` (Linux 6.14+)
to the thread cap, which holds for root too (``RLIMIT_NPROC`` does not bind uid 0).

Where unprivileged user namespaces are refused (``kernel.unprivileged_userns_clone=0``,
Ubuntu's AppArmor restriction, ``user.max_user_namespaces=0``, most containers) nothing
is made and the seccomp filter alone keeps the worker from other processes and IPC.

Nothing here imports torch.
"""

from __future__ import annotations

import ctypes
import os
import signal
import struct
import sys
from dataclasses import dataclass

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
PID_MAX_MIN = 301
"""The smallest ``pid_max`` the kernel accepts (RESERVED_PIDS + 1)."""


@dataclass
class Namespaces:
    """Which namespaces the worker is in now, and why one is missing."""

    user: bool = False
    ipc: bool = False
    net: bool = False
    pid: bool = False
    pid_max: int = 0
    proc: bool = False
    """/proc is the PID namespace's own (other processes have no entry there)."""
    problem: str = ""

    @property
    def private(self) -> bool:
        """The IPC, network and PID namespaces are all the worker's own."""
        return self.ipc and self.net and self.pid


def _unshare(libc: ctypes.CDLL, flags: int) -> None:
    if libc.unshare(ctypes.c_int(flags)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _map_ids(uid: int, gid: int) -> None:
    """Map this process's uid and gid to themselves inside its new user namespace."""
    try:
        _write("/proc/self/setgroups", "deny")
    except OSError:
        pass  # kernels before 3.19 have no such file
    _write("/proc/self/uid_map", f"{uid} {uid} 1\n")
    _write("/proc/self/gid_map", f"{gid} {gid} 1\n")


def enter(thread_cap: int) -> Namespaces:
    """Move this (single-threaded) process into new namespaces, as far as the kernel allows.

    With a PID namespace this returns only in the worker (pid 2 of the namespace); the
    processes that wait for it never return. ``thread_cap`` becomes the namespace's
    ``pid_max`` where the kernel keeps one per namespace.
    """
    ns = Namespaces()
    if not sys.platform.startswith("linux"):
        ns.problem = "not Linux"
        return ns
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError as exc:
        ns.problem = str(exc)
        return ns
    uid, gid = os.getuid(), os.getgid()
    try:
        _unshare(libc, CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWNET | CLONE_NEWPID)
    except OSError as exc:
        ns.problem = f"the kernel refused a user namespace ({exc.strerror})"
        return ns
    ns.user = ns.ipc = ns.net = True
    try:
        _map_ids(uid, gid)
    except OSError as exc:  # the ids show as the overflow id inside; the kernel still checks the real ones
        ns.problem = f"uid map: {exc.strerror}"
    _fork_into_pid_namespace()
    ns.pid = True
    ns.pid_max = _set_pid_max(thread_cap)
    ns.proc = _mount_own_proc(libc)
    return ns


_MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_REC, _MS_PRIVATE = 2, 4, 8, 1 << 14, 1 << 18


def _mount_own_proc(libc: ctypes.CDLL) -> bool:
    """Mount the PID namespace's own /proc over the machine's (in the worker's own mount namespace):
    other processes' /proc entries (their environment, command line, memory maps) are gone, with
    or without Landlock. False where the kernel refuses (a container that masks parts of /proc)."""
    if libc.mount(None, b"/", None, ctypes.c_ulong(_MS_REC | _MS_PRIVATE), None) != 0:
        return False
    flags = ctypes.c_ulong(_MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
    return bool(libc.mount(b"proc", b"/proc", b"proc", flags, None) == 0)


def _set_pid_max(cap: int) -> int:
    """This PID namespace's pid_max (Linux 6.14+ keeps one per namespace); 0 where it can't be set."""
    value = max(cap, PID_MAX_MIN)
    try:
        _write("/proc/sys/kernel/pid_max", str(value))
        with open("/proc/sys/kernel/pid_max") as fh:
            got = int(fh.read())
        return got if got == value else 0
    except (OSError, ValueError):
        return 0


def _fork_into_pid_namespace() -> None:
    """Fork the namespace's init and, under it, the worker; return only in the worker."""
    from tcopy_cli.process.privileges import die_with_parent

    status_read, status_write = os.pipe()
    init = os.fork()
    if init:  # the process tcopy started: wait outside, then end as the worker did
        os.close(status_write)
        _wait_outside(init, status_read)
    os.close(status_read)
    die_with_parent()  # (its parent's pid is not visible in here; tcopy kills the process group)
    worker = os.fork()
    if worker:  # pid 1 of the namespace
        _wait_as_init(worker, status_write)
    os.close(status_write)
    die_with_parent(1)  # and when init ends, the kernel ends the worker anyway


def _quiet() -> None:
    """A waiting process keeps none of the worker's pipes open (the parent reads them to their end)."""
    for fd in (0, 1):
        try:
            os.close(fd)
        except OSError:
            pass


def _wait_as_init(worker: int, status_write: int) -> None:
    _quiet()
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(1)
        except InterruptedError:
            continue
        if pid == worker:
            try:
                os.write(status_write, struct.pack("=i", status))
            except OSError:
                pass
            os._exit(0)


def _wait_outside(init: int, status_read: int) -> None:
    _quiet()
    while True:
        try:
            _, init_status = os.waitpid(init, 0)
            break
        except InterruptedError:
            continue
    data = b""
    try:
        data = os.read(status_read, 4)
    except OSError:
        pass
    status = struct.unpack("=i", data)[0] if len(data) == 4 else init_status
    end_as(status)


def end_as(status: int) -> None:
    """Exit with a child's wait status: the same exit code, or killed by the same signal."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            if sig not in (signal.SIGKILL, signal.SIGSTOP):
                signal.signal(sig, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
        except (OSError, ValueError):
            pass
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)
