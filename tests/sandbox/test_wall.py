"""Attacks on the kernel wall, by surface, each following a public technique.

Each test runs real Python inside the confined worker through the test hook (as a script
that got past the language sandbox would, or as the real-CPython engine will run every
script) and checks that the kernel refuses. Each one can fail: with
``TCOPY_WALL_UNCONFINED=1`` the same code runs in an unconfined worker and every test
here fails (``pytest tests/sandbox/test_wall.py -n 0`` under that variable).
"""

from __future__ import annotations

import ctypes
import errno
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from attempts import UNCONFINED, assert_refused, in_worker

from tcopy_cli.limits import Limits
from tcopy_cli.process import confine, landlock, libseccomp, memory, namespaces, seccomp
from tcopy_cli.worker import TEST_HOOK_ENV

LINUX = sys.platform.startswith("linux")
SECCOMP = LINUX and not seccomp.unavailable()
NAMESPACES = LINUX and not confine._user_namespaces()
ROOT = LINUX and os.geteuid() == 0
needs_seccomp = pytest.mark.skipif(not SECCOMP, reason="seccomp (with libseccomp) is not available here")
pytestmark = [
    pytest.mark.skipif(not LINUX, reason="the kernel wall is Linux's"),
    pytest.mark.usefixtures("allow_test_hook"),  # the probes travel as the test hook
]


@pytest.fixture
def victim() -> Iterator[subprocess.Popen[bytes]]:
    """Another process of the same user (standing for the user's shell, editor or the parent tcopy)."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


# --- other processes ---------------------------------------------------------------


@needs_seccomp
def test_prlimit64_on_another_pid_rlimit_cpu_kill(victim: subprocess.Popen[bytes]) -> None:
    """prlimit64(other_pid, RLIMIT_CPU, 1 s): the kernel would SIGKILL the other process."""
    import resource

    before = resource.prlimit(victim.pid, resource.RLIMIT_CPU)
    results = in_worker(f"""
import resource
attempt("prlimit_cpu", lambda: resource.prlimit({victim.pid}, resource.RLIMIT_CPU, (0, 0)))
attempt("prlimit_read", lambda: resource.prlimit({victim.pid}, resource.RLIMIT_NOFILE))
attempt("prlimit_self", lambda: resource.prlimit(0, resource.RLIMIT_NOFILE))
""")
    assert_refused(results, "prlimit_cpu", "prlimit_read", errno=errno.EPERM)
    assert results["prlimit_self"].startswith("ALLOWED")
    assert resource.prlimit(victim.pid, resource.RLIMIT_CPU) == before
    time.sleep(0.2)
    assert victim.poll() is None


@needs_seccomp
def test_setpriority_sched_setaffinity_sched_setscheduler_on_another_pid(victim: subprocess.Popen[bytes]) -> None:
    """Slow another process down: renice it, pin it to one CPU, make it SCHED_IDLE."""
    pid = victim.pid
    affinity, niceness = os.sched_getaffinity(pid), os.getpriority(os.PRIO_PROCESS, pid)
    results = in_worker(f"""
import os
attempt("setpriority", lambda: os.setpriority(os.PRIO_PROCESS, {pid}, 19))
attempt("setpriority_pgrp", lambda: os.setpriority(os.PRIO_PGRP, 0, 19))
attempt("setaffinity", lambda: os.sched_setaffinity({pid}, {{min(os.sched_getaffinity(0))}}))
attempt("setscheduler", lambda: os.sched_setscheduler({pid}, os.SCHED_IDLE, os.sched_param(0)))
attempt("setparam", lambda: os.sched_setparam({pid}, os.sched_param(0)))
attempt("self_nice", lambda: os.setpriority(os.PRIO_PROCESS, 0, min(19, os.getpriority(os.PRIO_PROCESS, 0) + 1)))
attempt("self_affinity", lambda: os.sched_setaffinity(0, os.sched_getaffinity(0)))
""")
    assert_refused(results, "setpriority", "setpriority_pgrp", "setaffinity", "setscheduler", "setparam")
    assert results["self_nice"].startswith("ALLOWED") and results["self_affinity"].startswith("ALLOWED")
    assert os.getpriority(os.PRIO_PROCESS, pid) == niceness
    assert os.sched_getaffinity(pid) == affinity
    assert os.sched_getscheduler(pid) == os.SCHED_OTHER


@needs_seccomp
def test_signals_kill_minus_one_tkill_pidfd_and_fown(victim: subprocess.Popen[bytes]) -> None:
    """kill(-1) (every process the user owns), tkill, pidfd_send_signal, and F_SETOWN (SIGIO to another pid)."""
    results = in_worker(f"""
import os, fcntl, signal
attempt("kill_all", lambda: os.kill(-1, 0))
attempt("kill_victim", lambda: os.kill({victim.pid}, signal.SIGTERM))
attempt("tkill", lambda: raw("tkill", {victim.pid}, 0))
attempt("pidfd_open", lambda: os.pidfd_open({victim.pid}))
r, w = os.pipe()
attempt("f_setown", lambda: fcntl.fcntl(r, fcntl.F_SETOWN, {victim.pid}))
attempt("f_setsig", lambda: fcntl.fcntl(r, 10, signal.SIGKILL))
attempt("rt_sigqueueinfo", lambda: raw("rt_sigqueueinfo", {victim.pid}, 0, None))
attempt("self", lambda: os.kill(os.getpid(), 0))
""")
    assert_refused(results, "kill_all", "kill_victim", "tkill", "pidfd_open", "f_setown", "f_setsig", errno=errno.EPERM)
    assert_refused(results, "rt_sigqueueinfo")
    assert results["self"].startswith("ALLOWED")
    assert victim.poll() is None


@needs_seccomp
def test_the_process_group_can_not_be_left() -> None:
    """setsid/setpgid: a worker outside tcopy's process group would survive tcopy's kill of the group."""
    results = in_worker("""
import os
attempt("setsid", lambda: os.setsid())
attempt("setpgid", lambda: os.setpgid(0, 0))
""")
    assert_refused(results, "setsid", "setpgid", errno=errno.EPERM)


@needs_seccomp
def test_prctl_pr_set_pdeathsig_0_and_friends() -> None:
    """prctl(PR_SET_PDEATHSIG, 0): outlive a tcopy that was killed; PR_SET_DUMPABLE, PR_SET_PTRACER, PR_SET_MM."""
    results = in_worker("""
def prctl(option, arg=0):
    if _libc.prctl(option, _ctypes.c_ulong(arg), 0, 0, 0) != 0:
        raise OSError(_ctypes.get_errno(), "prctl %d" % option)
    return 0
out = _ctypes.c_int(-1)
_libc.prctl(2, _ctypes.byref(out), 0, 0, 0)  # PR_GET_PDEATHSIG
report("pdeathsig", out.value)
attempt("pdeathsig_0", lambda: prctl(1, 0))
attempt("dumpable", lambda: prctl(4, 1))
attempt("ptracer_any", lambda: prctl(0x59616D61, 2**64 - 1))
attempt("set_mm", lambda: prctl(35, 8))
attempt("child_subreaper", lambda: prctl(36, 1))
attempt("set_name", lambda: prctl(15, 0) if False else _libc.prctl(15, b"worker", 0, 0, 0))
""")
    assert results["pdeathsig"] == signal.SIGKILL
    assert_refused(results, "pdeathsig_0", "dumpable", "ptracer_any", "set_mm", "child_subreaper", errno=errno.EPERM)
    assert results["set_name"] == "ALLOWED: 0"


@needs_seccomp
def test_no_process_creation_at_all() -> None:
    """fork, vfork, clone without CLONE_THREAD, clone with a namespace flag, posix_spawn, memfd exec."""
    results = in_worker("""
import os
def child_exits(pid):  # where a process was made (unconfined), the copy ends at once
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return pid
attempt("fork", lambda: child_exits(os.fork()))
attempt("clone_process", lambda: child_exits(raw("clone", 17, 0, 0, 0, 0)))  # SIGCHLD: a new process
attempt("clone_thread_newns", lambda: raw("clone", 0x00010000 | 0x00000100 | 0x00000800 | 0x40000000, 0, 0, 0, 0))
attempt("clone3", lambda: raw("clone3", None, 0))
attempt("posix_spawn", lambda: os.posix_spawn("/bin/true", ["true"], {}))
attempt("memfd", lambda: os.memfd_create("x"))
attempt("execveat", lambda: raw("execveat", -1, b"/nonexistent-tcopy", None, None, 0))
""")
    assert_refused(results, "fork", "clone_process", "clone_thread_newns", "posix_spawn", "memfd", "execveat")
    assert_refused(results, "execveat", errno=errno.EPERM)
    assert_refused(results, "clone3", errno=errno.ENOSYS)  # so the C library falls back to clone for threads


@needs_seccomp
def test_kernel_interfaces_that_cross_processes(victim: subprocess.Popen[bytes]) -> None:
    """io_uring, bpf, perf_event_open, userfaultfd, keyctl, kcmp, process_vm_readv, unshare, setns, mount:
    each called with arguments that work in an unconfined process of this user (root here)."""
    results = in_worker(f"""
import os
params = _ctypes.create_string_buffer(120)
attempt("io_uring_setup", lambda: raw("io_uring_setup", 1, params))
attr = _ctypes.create_string_buffer(bytes([2, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 1, 0, 0, 0]) + bytes(56))
attempt("bpf_map_create", lambda: raw("bpf", 0, attr, 72))  # BPF_MAP_CREATE, an array of one int
perf = _ctypes.create_string_buffer(128); perf[0] = 1; perf[4] = 128  # PERF_TYPE_SOFTWARE, size
attempt("perf_event_open", lambda: raw("perf_event_open", perf, 0, -1, -1, 0))
attempt("userfaultfd", lambda: raw("userfaultfd", 0))
attempt("keyctl", lambda: raw("keyctl", 0, -3, 0))  # KEYCTL_GET_KEYRING_ID of the session keyring
attempt("kcmp", lambda: raw("kcmp", os.getpid(), os.getpid(), 0, 0, 0))
buf = _ctypes.create_string_buffer(8)
iov = (_ctypes.c_void_p * 2)(_ctypes.addressof(buf), 8)
attempt("process_vm_readv", lambda: raw("process_vm_readv", os.getpid(), iov, 1, iov, 1, 0))
attempt("unshare_user", lambda: raw("unshare", 0x10000000))
attempt("setns", lambda: raw("setns", os.open("/proc/self/ns/net", os.O_RDONLY), 0))
attempt("mount", lambda: raw("mount", b"none", b"/nonexistent-tcopy", b"tmpfs", 0, None))
attempt("ptrace_attach", lambda: raw("ptrace", 16, {victim.pid}, 0, 0))
""")
    names = ["io_uring_setup", "bpf_map_create", "perf_event_open", "userfaultfd", "keyctl", "kcmp"]
    names += ["process_vm_readv", "unshare_user", "mount", "ptrace_attach"]
    assert_refused(results, *names, errno=errno.EPERM)
    assert_refused(results, "setns")


@needs_seccomp
def test_unknown_and_foreign_abi_system_calls_fail_without_killing() -> None:
    """A new C library probing a call this filter does not know gets ENOSYS; an x32 call gets EPERM."""
    results = in_worker("""
attempt("unknown", lambda: _libc.syscall(_ctypes.c_long(1000)) and _ctypes.get_errno())
attempt("x32_getpid", lambda: _libc.syscall(_ctypes.c_long(0x40000000 + 39)) and _ctypes.get_errno())
report("alive", True)
""")
    assert results["unknown"] == f"ALLOWED: {errno.ENOSYS}"
    if os.uname().machine == "x86_64":
        assert results["x32_getpid"] == f"ALLOWED: {errno.EPERM}"
    assert results["alive"] is True


# --- memory of other processes ----------------------------------------------------


@pytest.fixture
def shm_segment() -> Iterator[int]:
    """A System V shared memory segment another process of the user made, holding a secret."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    shmid = libc.shmget(0, 4096, 0o1600)  # IPC_PRIVATE, IPC_CREAT | 0600
    if shmid < 0:
        pytest.skip("System V shared memory is not available here")
    addr = libc.shmat(shmid, None, 0)
    ctypes.memmove(addr, b"the secret of another process", 29)
    libc.shmdt(ctypes.c_void_p(addr))
    try:
        yield shmid
    finally:
        libc.shmctl(shmid, 0, None)  # IPC_RMID


@needs_seccomp
def test_sysv_shmat_on_a_segment_another_process_created_mit_shm_class(shm_segment: int) -> None:
    """shmat on another process's segment reads its memory (the MIT-SHM leak bubblewrap and Docker close)."""
    results = in_worker(f"""
_libc.shmat.restype = _ctypes.c_void_p
def read_segment():
    addr = _libc.shmat({shm_segment}, None, 0o10000)  # SHM_RDONLY
    if addr in (None, 2**64 - 1):
        raise OSError(_ctypes.get_errno(), "shmat")
    return _ctypes.string_at(addr, 29)
attempt("shmat", read_segment)
attempt("shmctl_stat", lambda: raw("shmctl", {shm_segment}, 2, _ctypes.create_string_buffer(128)))  # IPC_STAT
""")
    assert_refused(results, "shmat", "shmctl_stat")


def _segments() -> set[str]:
    try:
        with open("/proc/sysvipc/shm") as fh:
            return {line.split()[1] for line in fh.readlines()[1:]}
    except OSError:
        return set()


@needs_seccomp
def test_sysv_segments_and_message_queues_that_outlive_the_run() -> None:
    """A 64 MiB segment made and detached outlives the process, bounded by no limit: repeated, it fills RAM."""
    before = _segments()
    results = in_worker("""
import os
attempt("shmget", lambda: raw("shmget", 0, 64 * 1024 * 1024, 0o1600))
attempt("msgget", lambda: raw("msgget", 0, 0o1600))
attempt("semget", lambda: raw("semget", 0, 1, 0o1600))
attempt("mq_open", lambda: raw("mq_open", b"tcopy-test", os.O_CREAT | os.O_RDWR, 0o600, None))
""")
    made = _segments() - before
    try:
        assert_refused(results, "shmget", "msgget", "semget", "mq_open", errno=errno.EPERM)
        assert not made
    finally:
        for shmid in made:
            ctypes.CDLL(None).shmctl(int(shmid), 0, None)
        libc = ctypes.CDLL(None)
        for name, remove in (("msgget", "msgctl"), ("semget", "semctl")):
            if results[name].startswith("ALLOWED"):  # IPC_RMID
                libc.syscall(libseccomp.resolve(remove), int(results[name].split()[1]), 0, None)
        if results["mq_open"].startswith("ALLOWED"):
            libc.syscall(libseccomp.resolve("mq_unlink"), b"tcopy-test")


@pytest.mark.skipif(not NAMESPACES, reason="unprivileged user namespaces are refused here")
def test_the_worker_has_private_ipc_network_and_pid_namespaces(victim: subprocess.Popen[bytes]) -> None:
    """Without the filter, the namespaces alone hide other processes, their IPC and the network."""
    results = in_worker(f"""
import os
report("pid", os.getpid())
report("ns", {{n: os.readlink("/proc/self/ns/" + n) for n in ("ipc", "net", "pid", "user")}})
report("proc", [os.path.exists("/proc/%d" % pid) for pid in (1, 2, {victim.pid}, {os.getpid()})])
""")
    assert results["pid"] == 2  # init is 1 (it waits for the worker), nobody else is visible
    # its own /proc: no entry (environ, cmdline, maps) for another process, even where Landlock is missing
    assert results["proc"] == [True, True, False, False]
    mine = {n: os.readlink(f"/proc/self/ns/{n}") for n in ("ipc", "net", "pid", "user")}
    for name in ("ipc", "net", "pid", "user"):
        assert results["ns"][name] != mine[name], name


# --- the environment ---------------------------------------------------------------


def test_api_keys_are_not_in_os_environ_or_proc_self_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    """The user's environment: API keys and tokens in os.environ and /proc/self/environ."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-tcopy-test-secret")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_tcopy_test_secret")
    monkeypatch.setenv("TORCH_HUB_TOKEN", "hub-tcopy-test-secret")  # an allowed prefix, a secret's name
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    results = in_worker("""
import os
report("environ", dict(os.environ))
attempt("proc_environ", lambda: open("/proc/self/environ", "rb").read().decode("latin-1"))
""")
    assert "secret" not in repr(results["environ"]), results["environ"]
    assert "secret" not in results["proc_environ"]
    assert results["environ"].get("OMP_NUM_THREADS") == "2"  # a setting the user made on purpose
    assert set(results["environ"]) <= {
        *(k for k in os.environ if k.startswith(("LC_", "OMP_", "TORCH_", "CUDA_", "PYTORCH_")) or k == "LANG"),
        *("HOME", "PATH", "PYTHONPATH", "PYTHONSAFEPATH", "PYTHONDONTWRITEBYTECODE", "MALLOC_ARENA_MAX"),
        *(TEST_HOOK_ENV, "TORCHINDUCTOR_CACHE_DIR"),
    }


@pytest.mark.parametrize("users", [None, "ACTIVE"])
def test_the_script_sees_the_users_openmp_wait_policy(monkeypatch: pytest.MonkeyPatch, users: str | None) -> None:
    """The worker loads OpenMP with passive waiting unless the user chose; the script sees the user's setting."""
    if users is None:
        monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    else:
        monkeypatch.setenv("OMP_WAIT_POLICY", users)
    results = in_worker("""
import os
report("policy", os.environ.get("OMP_WAIT_POLICY"))
""")
    assert results["policy"] == users


# --- threads, memory and resources ------------------------------------------------


@needs_seccomp
def test_thread_bomb() -> None:
    """Start 1,500 threads (the address-space limit left room for about 190,000)."""
    results = in_worker("""
import threading
stop = threading.Event()
started = []
try:
    for i in range(1500):
        t = threading.Thread(target=stop.wait, daemon=True)
        t.start()
        started.append(t)
    report("bomb", "ALLOWED: %d threads" % len(started))
except BaseException as exc:
    report("bomb", "refused after %d threads: %s: %s" % (len(started), type(exc).__name__, exc))
stop.set()
for t in started:
    t.join()
""")
    assert results["bomb"].startswith("refused"), results["bomb"]
    started = int(results["bomb"].split()[2])
    # torch's pools and a few script threads fit. The kernel never applies RLIMIT_NPROC to root: root is
    # bound by its PID namespace's pid_max (at least 301) and, without one, only by RLIMIT_DATA (the stacks).
    if not ROOT:
        assert 8 <= started <= confine.thread_cap()
    elif NAMESPACES:
        assert 8 <= started <= max(confine.thread_cap(), namespaces.PID_MAX_MIN)
    else:
        assert 8 <= started < 1500


def test_raise_rlimit_hard_limits_as_root() -> None:
    """Raise hard limits (RLIMIT_DATA, RLIMIT_NOFILE, RLIMIT_NPROC, RLIMIT_CPU): root could, with CAP_SYS_RESOURCE."""
    results = in_worker("""
import resource
def raise_hard(which):
    soft, hard = resource.getrlimit(which)
    new = resource.RLIM_INFINITY if hard != resource.RLIM_INFINITY else hard
    if new == hard:
        new = hard  # already unlimited: nothing to raise
        raise OSError(0, "already unlimited")
    resource.setrlimit(which, (soft, new))
    return resource.getrlimit(which)
attempt("data", lambda: raise_hard(resource.RLIMIT_DATA))
nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1] + 1
attempt("nofile", lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile)))
attempt("fsize", lambda: raise_hard(resource.RLIMIT_FSIZE))
report("caps", [l for l in open("/proc/self/status") if l.startswith("Cap")])
""")
    assert_refused(results, "data", "nofile", "fsize")
    held = {line.split(":")[0]: int(line.split()[1], 16) for line in results["caps"]}
    assert held["CapEff"] == held["CapPrm"] == held["CapInh"] == held["CapAmb"] == 0, held
    if ROOT or NAMESPACES:  # emptying the bounding set takes CAP_SETPCAP: a normal user outside a namespace has none
        assert held["CapBnd"] == 0, held


@needs_seccomp
def test_shared_anonymous_memory_that_rlimit_data_would_not_count() -> None:
    """mmap(MAP_SHARED | MAP_ANONYMOUS), memfd and /dev/zero: memory outside the private-memory ceiling."""
    results = in_worker("""
import mmap, os
attempt("shared_anon", lambda: mmap.mmap(-1, 1 << 30, flags=mmap.MAP_SHARED))
attempt("memfd", lambda: os.memfd_create("x"))
zero = lambda: os.open("/dev/zero", os.O_RDONLY)
attempt("dev_zero", lambda: mmap.mmap(zero(), 1 << 30, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ))
attempt("private_anon", lambda: len(mmap.mmap(-1, 1 << 20, flags=mmap.MAP_PRIVATE)))
""")
    assert_refused(results, "shared_anon", "memfd", "dev_zero")
    assert results["private_anon"] == f"ALLOWED: {1 << 20}"


@needs_seccomp
def test_memory_the_private_memory_ceiling_would_not_count_growsdown_and_page_tables() -> None:
    """MAP_GROWSDOWN makes a mapping the kernel counts as stack (outside RLIMIT_DATA); a 1 TiB reservation
    read page by page grows page tables, 2 GB per TiB, that no data limit counts (public: page-table bloat)."""
    results = in_worker("""
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
def mapped(size, prot, flags):
    p = libc.mmap(None, size, prot, flags, -1, 0)
    if p in (None, ctypes.c_void_p(-1).value):
        raise OSError(ctypes.get_errno(), "mmap")
    return "mapped"
attempt("growsdown", lambda: mapped(1 << 30, 3, 0x02 | 0x20 | 0x100))
attempt("reserve_1tib", lambda: mapped(1 << 40, 1, 0x02 | 0x20 | 0x4000))
attempt("private_1gib", lambda: mapped(1 << 30, 3, 0x02 | 0x20))
""")
    assert_refused(results, "growsdown", "reserve_1tib")
    assert results["private_1gib"] == "ALLOWED: 'mapped'"


@needs_seccomp
def test_epoll_watches_the_user_shares_and_file_flags_set_through_a_read_only_fd(tmp_path: object) -> None:
    """Every epoll watch counts against the user's fs.epoll.max_user_watches (all their programs get ENOSPC
    once it is used up); FS_IOC_SETFLAGS changes a file its owner opened for reading (public: resource
    exhaustion of a per-user kernel limit; chattr through a read-only descriptor)."""
    results = in_worker("""
import fcntl, os, resource, select, struct, sys
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
attempt("nofile_over_512", lambda: soft > 512 or hard > 512 or "at most 512")
fd = os.open(sys.executable, os.O_RDONLY)
attempt("setflags", lambda: fcntl.ioctl(fd, 0x40086602, struct.pack("l", 0)))
os.close(fd)
def watches():
    fds = []
    try:
        while len(fds) < 600:
            fds.append(os.eventfd(0))
        ep = select.epoll()
        for one in fds:
            ep.register(one, select.EPOLLIN)
        ep.close()
        return len(fds)
    finally:
        for one in fds:
            os.close(one)
attempt("600_watches", watches)
""")
    assert results["nofile_over_512"] == "ALLOWED: 'at most 512'", results["nofile_over_512"]
    assert_refused(results, "600_watches", "setflags")


def _hwm(results: dict[str, str]) -> int:
    return int(results["hwm"]) * 1024


def test_max_bytes_is_a_ceiling_on_what_the_script_holds() -> None:
    """40 tensors of 160 MB kept in a list with --max-bytes 1 GB: before, 6.4 GB were held (RLIMIT_AS had
    8 GiB of headroom for a CUDA build's libraries); now the allocation past RLIMIT_DATA fails in the script."""
    max_bytes = 10**9
    results = in_worker(
        """
import torch
def vm(name):
    return int([l for l in open("/proc/self/status") if l.startswith(name)][0].split()[1])
report("held_at_start", vm("VmData:"))
xs = []
try:
    for i in range(40):
        xs.append(torch.ones(40_000_000))
    report("tensors", "ALLOWED: %d" % len(xs))
except RuntimeError as exc:
    report("tensors", "refused after %d: %s" % (len(xs), str(exc)[:200]))
report("hwm", vm("VmHWM:"))
""",
        limits=Limits(max_bytes=max_bytes),
    )
    assert results["tensors"].startswith("refused"), results["tensors"]
    assert "can't allocate memory" in results["tensors"]
    ceiling = max_bytes + results["held_at_start"] * 1024 + memory.DATA_HEADROOM
    assert _hwm(results) < ceiling, (_hwm(results), ceiling)


def test_an_allocation_past_the_ceiling_is_an_error_step_not_a_crash() -> None:
    """The same attack as a script statement: an error step at its line, and the run goes on to report it."""
    from tcopy_cli.program import parse_program
    from tcopy_cli.supervise import WorkerOptions, run_in_worker

    steps: list = []
    run_in_worker(
        parse_program("import torch\nxs = [torch.ones(40_000_000) for _ in range(40)]\n", "<t>"),
        WorkerOptions(trust=UNCONFINED, limits=Limits(max_bytes=10**9)),
        steps.append,
        lambda _info: None,
    )
    last = steps[-1]
    assert last.line == 2 and last.error is not None, last
    assert last.error.type in ("RuntimeError", "LimitExceeded"), last.error
    assert "ProcessCrashed" not in last.error.type


# --- the fd table, /proc and the terminal -----------------------------------------


@needs_seccomp
def test_the_fd_table_holds_only_the_worker_pipes_and_no_terminal_can_be_typed_into() -> None:
    """Inherited descriptors (a terminal, a file of the parent) and TIOCSTI (typing into a terminal)."""
    results = in_worker("""
import os, stat, fcntl, termios
fds = {}
for name in os.listdir("/proc/self/fd"):
    try:
        st = os.fstat(int(name))
    except OSError:
        continue
    fds[int(name)] = "fifo" if stat.S_ISFIFO(st.st_mode) else "chr" if stat.S_ISCHR(st.st_mode) else "other"
report("fds", fds)
attempt("tiocsti", lambda: fcntl.ioctl(2, termios.TIOCSTI, b"x"))
attempt("tty", lambda: open("/dev/tty", "rb"))
""")
    assert set(results["fds"].values()) <= {"fifo", "other"}, results["fds"]  # pipes (and the listing's own fd)
    assert_refused(results, "tiocsti", errno=errno.EPERM)
    assert_refused(results, "tty")


@needs_seccomp
def test_other_processes_proc_entries_are_out_of_reach(victim: subprocess.Popen[bytes]) -> None:
    """/proc/PID/environ, cmdline, maps and mem of another process of the user."""
    results = in_worker(f"""
for part in ("environ", "cmdline", "maps", "status"):
    attempt(part, lambda part=part: open("/proc/{victim.pid}/" + part, "rb").read()[:40])
attempt("mem", lambda: open("/proc/{victim.pid}/mem", "rb").read(1))
attempt("parent_environ", lambda: open("/proc/{os.getpid()}/environ", "rb").read()[:40])
""")
    assert_refused(results, "environ", "cmdline", "maps", "status", "mem", "parent_environ")


def test_the_landlock_read_paths_name_the_worker_own_proc_directory() -> None:
    """In a PID namespace getpid() is 2: /proc/2 is another process (kthreadd) for the kernel's /proc."""
    paths = landlock.read_paths()
    assert f"/proc/{os.getpid()}" in paths
    assert "/dev/zero" not in paths  # a shared mapping of it is memory RLIMIT_DATA does not count
