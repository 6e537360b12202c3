"""Confine the worker for the rest of its life, as far as the kernel allows (Linux).

``confine()`` is called by the worker before it imports torch or NumPy, while it is the
only thread, so every thread those libraries start inherits what is set here. In order:

1. namespaces (``process.namespaces``): a private user, IPC, network and PID namespace
   where unprivileged user namespaces are allowed; the worker forks into the PID
   namespace here;
2. ``no_new_privs``, the thread cap (``RLIMIT_NPROC``, and the PID namespace's
   ``pid_max``), fixed open-file and stack limits;
3. Landlock (``process.landlock``): read-only access beneath the places Python loads from;
4. every capability dropped (``process.privileges``);
5. the seccomp allow-list (``process.seccomp``), last, since it refuses what the steps
   before it do.

The run works without any of them; ``Confinement.describe()`` names what is active, e.g.
``landlock+seccomp+namespaces+rlimits``, and ``problems`` says why a part is missing.

Nothing here imports torch.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field

from tcopy_cli.process import landlock, libseccomp, namespaces, privileges, seccomp

THREADS_PER_CPU = 4
THREADS_EXTRA = 64


def thread_cap() -> int:
    """The most threads the worker may run: torch's intra-op and inter-op pools, OpenMP's and
    Python's fit (measured: at most 2 per CPU and a few more)."""
    return THREADS_PER_CPU * (os.cpu_count() or 1) + THREADS_EXTRA


@dataclass
class Confinement:
    """What ``confine`` managed to apply, and why a part is missing."""

    landlock_abi: int = 0
    seccomp: bool = False
    namespaces: bool = False
    rlimits: bool = False
    capabilities_dropped: bool = False
    threads: str = ""
    """How the thread cap holds: ``RLIMIT_NPROC 72``, ``pid_max 301`` ... ("" if it does not)."""
    problems: list[str] = field(default_factory=list)

    def describe(self) -> str:
        """``landlock+seccomp+namespaces+rlimits``, a subset of it, or ``none``."""
        parts = [
            name
            for name, active in (
                ("landlock", self.landlock_abi > 0),
                ("seccomp", self.seccomp),
                ("namespaces", self.namespaces),
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


def _tasks_of(uid: int) -> int:
    """How many threads the processes of ``uid`` run now (what RLIMIT_NPROC counts outside a user namespace)."""
    count = 0
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if os.stat(f"/proc/{name}").st_uid == uid:
                    count += len(os.listdir(f"/proc/{name}/task"))
            except OSError:
                continue
    return count


def _cap_threads(result: Confinement, ns: namespaces.Namespaces) -> None:
    """RLIMIT_NPROC counts the tasks of the real uid, in this user namespace where it is private."""
    import resource

    cap = thread_cap()
    ways = [f"pid_max {ns.pid_max}"] if ns.pid_max else []
    if os.getuid() == 0:  # the kernel never applies RLIMIT_NPROC to uid 0
        if not ways:
            result.problems.append("threads: no cap for root without a PID namespace of its own (Linux 6.14+)")
    else:
        limit = cap if ns.user else _tasks_of(os.getuid()) + cap
        _, hard = resource.getrlimit(resource.RLIMIT_NPROC)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NPROC, (limit, limit))
            ways.append(f"RLIMIT_NPROC {limit}" + ("" if ns.user else " (the user's threads included)"))
        except (OSError, ValueError) as exc:
            result.problems.append(f"RLIMIT_NPROC: {exc}")
    result.threads = ", ".join(ways)


OPEN_FILES = 512
"""The most files the worker holds open. Each epoll instance can watch each of them once, and the
watches count against the user's ``fs.epoll.max_user_watches`` (a few million, shared by all their
processes): 512 files allow at most 256 x 256 of them."""
STACK_LIMIT = 64 * 1024**2
"""The main thread's stack when the user's limit is unlimited: it grows outside RLIMIT_DATA."""


def _fix_limits() -> None:
    """Limits the worker could raise up to their hard value are fixed at their soft one: open files
    (each holds kernel memory; at most ``OPEN_FILES``) and the main thread's stack (not counted by
    RLIMIT_DATA)."""
    import resource

    for which in (resource.RLIMIT_NOFILE, resource.RLIMIT_STACK):
        soft, hard = resource.getrlimit(which)
        if soft == resource.RLIM_INFINITY and which == resource.RLIMIT_STACK:
            soft = STACK_LIMIT if hard == resource.RLIM_INFINITY else min(STACK_LIMIT, hard)
        if which == resource.RLIMIT_NOFILE and (soft == resource.RLIM_INFINITY or soft > OPEN_FILES):
            soft = OPEN_FILES
        try:
            resource.setrlimit(which, (soft, soft))
        except (OSError, ValueError):
            pass


def confine(device: str = "cpu", readable: Iterable[str] = ()) -> Confinement:
    """Confine this process for the rest of its life, as far as the kernel allows.

    ``device`` other than ``cpu`` keeps the GPU driver's device nodes writable.
    """
    result = Confinement()
    if not sys.platform.startswith("linux"):
        result.problems.append("not Linux: no Landlock, seccomp or namespaces")
        result.rlimits = rlimits_in_place()
        return result
    gpu = device.strip().lower() != "cpu"
    ns = namespaces.enter(thread_cap())  # with a PID namespace, only the worker returns
    result.namespaces = ns.private
    if ns.problem:
        result.problems.append(f"namespaces: {ns.problem}")
    try:
        privileges.no_new_privs()
    except OSError as exc:
        result.problems.append(f"no_new_privs: {exc}")
        return result
    _cap_threads(result, ns)
    _fix_limits()
    result.rlimits = rlimits_in_place()
    abi = landlock.landlock_abi()
    libc = landlock.libc_handle()
    if abi <= 0 or libc is None:
        result.problems.append("Landlock is not available in this kernel (5.13+ with the landlock LSM enabled)")
    else:
        try:
            landlock.apply(libc, abi, landlock.read_paths(readable), landlock.device_paths() if gpu else [])
            result.landlock_abi = abi
        except OSError as exc:
            result.problems.append(f"Landlock: {exc}")
    try:
        if not privileges.drop_capabilities() and privileges.capabilities_held():
            result.problems.append("capabilities: the bounding set could not be emptied")
        result.capabilities_dropped = privileges.capabilities_held() == 0
    except OSError as exc:
        result.problems.append(f"capabilities: {exc}")
    try:
        seccomp.install(os.getpid(), gpu)
        result.seccomp = True
    except OSError as exc:
        result.problems.append(f"seccomp: {exc.strerror or exc}")
    return result


def _user_namespaces() -> str:
    """Why this process may not make a user namespace ("" if it may; probed in a child)."""
    if not sys.platform.startswith("linux"):
        return "not Linux"
    import ctypes

    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        libc = ctypes.CDLL(None, use_errno=True)
        flags = namespaces.CLONE_NEWUSER | namespaces.CLONE_NEWIPC | namespaces.CLONE_NEWNET | namespaces.CLONE_NEWPID
        os._exit(0 if libc.unshare(ctypes.c_int(flags)) == 0 else min(ctypes.get_errno(), 255))
    _, status = os.waitpid(pid, 0)
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else 255
    return "" if code == 0 else f"the kernel refused a user namespace ({os.strerror(code)})"


def available() -> str:
    """What a run on this machine would get (for ``tcopy --version --verbose``), e.g.
    ``landlock (ABI 7, with TCP and signal scoping)+seccomp (allow-list, libseccomp 2.5.4)+namespaces+rlimits``."""
    parts: list[str] = []
    abi = landlock.landlock_abi()
    if abi > 0:
        extras = [name for name, since in (("TCP", 4), ("signal scoping", 6)) if abi >= since]
        parts.append(f"landlock (ABI {abi}" + (f", with {' and '.join(extras)})" if extras else ")"))
    if not seccomp.unavailable():
        parts.append(f"seccomp (allow-list, libseccomp {libseccomp.version()})")
    if not _user_namespaces():
        parts.append("namespaces (user, IPC, network, PID)")
    try:
        import resource  # noqa: F401

        parts.append("rlimits")
    except ImportError:
        pass
    return "+".join(parts) or "none"


def missing() -> list[str]:
    """Why each part ``available()`` leaves out is missing here."""
    out = []
    if landlock.landlock_abi() <= 0:
        out.append("landlock: not available in this kernel (5.13+ with the landlock LSM enabled)")
    if why := seccomp.unavailable():
        out.append(f"seccomp: {why}")
    if why := _user_namespaces():
        out.append(f"namespaces: {why}")
    return out
