"""The kernel refuses what a script must never do, even with the language sandbox bypassed.

A test-only hook executes real Python inside the confined worker (after confinement,
before the script's first statement): the operations below must fail there because of
Landlock and seccomp, not because of tcopy's own checks. Each test is skipped where the
kernel lacks the protection it relies on.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
from pathlib import Path

import pytest
from attempts import assert_refused, in_worker, run_hook
from cli_runs import ROOT, environ, invoke, tcopy

from tcopy_cli.limits import Limits
from tcopy_cli.process import confine, landlock, memory, seccomp
from tcopy_cli.program import parse_program
from tcopy_cli.supervise import WorkerOptions, run_in_worker
from tcopy_cli.worker import TEST_HOOK_ENV

LINUX = sys.platform.startswith("linux")
LANDLOCK = LINUX and landlock.landlock_abi() > 0
SECCOMP = LINUX and not seccomp.unavailable()
NAMESPACES = LINUX and not confine._user_namespaces()
needs_landlock = pytest.mark.skipif(not LANDLOCK, reason="Landlock is not available on this kernel")
needs_seccomp = pytest.mark.skipif(not SECCOMP, reason="seccomp is not available here")
needs_both = pytest.mark.skipif(not (LANDLOCK and SECCOMP), reason="needs Landlock and seccomp")
pytestmark = pytest.mark.usefixtures("allow_test_hook")  # the probes travel as the test hook


@needs_landlock
def test_no_file_can_be_written_anywhere(tmp_path: Path) -> None:
    target = tmp_path / "escaped.txt"
    results = in_worker(f"""
import os
attempt("open_w", lambda: open({str(target)!r}, "w"))
attempt("os_open_creat", lambda: os.open({str(tmp_path / "b")!r}, os.O_WRONLY | os.O_CREAT, 0o600))
attempt("mkdir", lambda: os.mkdir({str(tmp_path / "d")!r}))
attempt("home", lambda: open(os.path.expanduser("~/.tcopy-escape"), "a"))
attempt("dev_shm", lambda: open("/dev/shm/tcopy-escape", "w"))
attempt("tmp", lambda: open("/tmp/tcopy-escape-test", "w"))
""")
    assert_refused(results, "open_w", "os_open_creat", "mkdir", "home", "dev_shm", "tmp")
    assert not target.exists() and not (tmp_path / "b").exists() and not (tmp_path / "d").exists()


@needs_landlock
def test_existing_files_can_not_be_changed_or_removed(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    results = in_worker(f"""
import os
attempt("append", lambda: open({str(victim)!r}, "a"))
attempt("truncate", lambda: os.truncate({str(victim)!r}, 0))
attempt("unlink", lambda: os.unlink({str(victim)!r}))
attempt("rename", lambda: os.rename({str(victim)!r}, {str(tmp_path / "moved")!r}))
""")
    assert_refused(results, "append", "truncate", "unlink", "rename")
    assert victim.read_text() == "keep me"


@needs_landlock
def test_reading_outside_the_python_installation_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("password")
    results = in_worker(f'attempt("read", lambda: open({str(secret)!r}).read())')
    assert_refused(results, "read")


@needs_both
def test_no_process_can_be_started() -> None:
    results = in_worker("""
import os, subprocess
attempt("execv", lambda: os.execv("/bin/true", ["true"]))
attempt("subprocess", lambda: subprocess.run(["/bin/true"]))
attempt("fork", lambda: os.fork())
attempt("posix_spawn", lambda: os.posix_spawn("/bin/true", ["true"], {}))
""")
    assert_refused(results, "execv", "subprocess", "fork", "posix_spawn")


@needs_both
def test_os_system_starts_no_shell() -> None:
    # os.system reports failure through its status instead of raising: the C library's system()
    # returns a shell's exit 127 (status 32512) when it could not start one, -1 when it could not
    # even try. Any other status means a shell ran (unconfined, `true` gives 0).
    results = in_worker('import os\nattempt("system", lambda: os.system("true"))')
    assert results["system"] in ("ALLOWED: 32512", "ALLOWED: -1") or results["system"].startswith("refused"), results


@needs_seccomp
def test_no_socket_can_be_created() -> None:
    results = in_worker("""
import socket
attempt("inet", lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM))
attempt("inet6", lambda: socket.socket(socket.AF_INET6, socket.SOCK_DGRAM))
attempt("unix", lambda: socket.socket(socket.AF_UNIX))
attempt("pair", lambda: socket.socketpair())
""")
    assert_refused(results, "inet", "inet6", "unix", "pair")


@needs_seccomp
def test_no_connection_to_localhost() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        server.settimeout(0.2)
        port = server.getsockname()[1]
        results = in_worker(f"""
import socket
attempt("connect", lambda: socket.create_connection(("127.0.0.1", {port}), timeout=2))
""")
        with pytest.raises(TimeoutError):
            server.accept()
    assert_refused(results, "connect")


def test_no_signal_to_the_parent_or_others() -> None:
    if not (SECCOMP or (LANDLOCK and landlock.landlock_abi() >= 6)):
        pytest.skip("needs seccomp or Landlock ABI 6")
    received: list[int] = []
    previous = signal.signal(signal.SIGUSR1, lambda sig, _frame: received.append(sig))
    try:
        results = in_worker(f"""
import os, signal
attempt("kill_parent", lambda: os.kill({os.getpid()}, signal.SIGUSR1))
attempt("kill_ppid", lambda: os.kill(os.getppid(), 0))
attempt("kill_init", lambda: os.kill(1, 0))
attempt("killpg", lambda: os.killpg(os.getpgid({os.getpid()}), signal.SIGUSR1))
attempt("self", lambda: os.kill(os.getpid(), 0))
""")
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert_refused(results, "kill_parent", "kill_ppid", "kill_init", "killpg")
    assert results["self"].startswith("ALLOWED")  # a process may still signal itself
    assert not received


@needs_seccomp
def test_no_ptrace_or_foreign_memory() -> None:
    results = in_worker(f"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
def ptrace():
    if libc.ptrace(16, {os.getpid()}, 0, 0) != 0:  # PTRACE_ATTACH
        raise OSError(ctypes.get_errno(), "ptrace")
attempt("ptrace", ptrace)
attempt("mem", lambda: open("/proc/{os.getpid()}/mem", "rb").read(1))
""")
    assert_refused(results, "ptrace", "mem")


@needs_both
def test_threads_and_torch_still_work_after_confinement() -> None:
    """Confinement must not break torch: threads, autograd, NumPy, matmul on several threads."""
    results = in_worker("""
import threading
import numpy as np
import torch
box = []
t = threading.Thread(target=lambda: box.append(1)); t.start(); t.join()
report("thread", box == [1])
torch.manual_seed(0)
x = torch.randn(64, 64, requires_grad=True)
(x @ x).tanh().sum().backward()
report("grad", float(x.grad.abs().sum()))
a = np.arange(12.0).reshape(3, 4)
report("numpy", float((a @ a.T).sum()))
report("threads", torch.get_num_threads())
""")
    import numpy as np
    import torch

    torch.manual_seed(0)
    x = torch.randn(64, 64, requires_grad=True)
    (x @ x).tanh().sum().backward()
    assert results["thread"] is True
    assert results["grad"] == pytest.approx(float(x.grad.abs().sum()), rel=1e-5)
    a = np.arange(12.0).reshape(3, 4)
    assert results["numpy"] == float((a @ a.T).sum())


def test_find_library_works_after_confinement() -> None:
    """CUDA builds of torch call ctypes.util.find_library while being imported (cuda.pathfinder);
    in the confined worker it must give up quietly, not fail making a temporary file for gcc."""
    results = in_worker("""
import ctypes.util
attempt("find_library", lambda: ctypes.util.find_library("dl"))
""")
    assert results["find_library"].startswith("ALLOWED"), results


def test_optimizers_and_lazy_torch_imports_work_after_confinement() -> None:
    """torch imports some modules lazily (``torch.optim`` pulls in ``torch._dynamo``, which
    asks ``tempfile`` for a directory); that must still work once no file can be written."""
    script = (
        "import torch\n"
        "w = torch.ones(2, requires_grad=True)\n"
        "opt = torch.optim.SGD([w], lr=0.5)\n"
        "(w * w).sum().backward()\n"
        "opt.step()\n"
    )
    steps: list = []
    run_in_worker(parse_program(script, "<test>"), WorkerOptions(limits=Limits()), steps.append, lambda _info: None)
    assert [s.error for s in steps if s.error] == []
    import torch

    w = torch.ones(2, requires_grad=True)
    opt = torch.optim.SGD([w], lr=0.5)
    (w * w).sum().backward()
    opt.step()
    assert steps[-1].tensors["w"].values == w.detach().tolist()


@needs_landlock
def test_trust_runs_unconfined_in_a_worker(tmp_path: Path) -> None:
    target = tmp_path / "written.txt"
    results = in_worker(f'attempt("write", lambda: open({str(target)!r}, "w").write("x"))', trust=True)
    assert results["write"] == "ALLOWED: 1"
    assert target.read_text() == "x"


def test_the_hook_needs_the_test_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TEST_HOOK_ENV)
    with pytest.raises(RuntimeError, match="did not run the test hook"):
        run_hook(WorkerOptions(test_hook={"code": "report('ran', True)"}))


def test_start_event_names_the_active_protections() -> None:
    infos = []
    run_in_worker(parse_program("x = 1", "<t>"), WorkerOptions(), lambda s: None, infos.append)
    assert infos[0].confinement == _expected_confinement()
    infos.clear()
    run_in_worker(parse_program("x = 1", "<t>"), WorkerOptions(trust=True), lambda s: None, infos.append)
    assert infos[0].confinement == "none (--trust)"


def test_rlimits_hold_in_the_worker() -> None:
    results = in_worker("""
import resource
report("fsize", resource.getrlimit(resource.RLIMIT_FSIZE)[0])
report("core", resource.getrlimit(resource.RLIMIT_CORE)[0])
report("data", resource.getrlimit(resource.RLIMIT_DATA))
report("cpu", resource.getrlimit(resource.RLIMIT_CPU)[0])
""")
    assert results["fsize"] == 0 and results["core"] == 0
    soft, hard = results["data"]
    assert soft == hard and Limits().max_bytes + memory.DATA_HEADROOM < soft < Limits().max_bytes + 2 * 1024**3
    assert results["cpu"] > Limits().timeout


def test_the_parent_imports_no_torch() -> None:
    import subprocess

    code = (
        "import sys, tcopy_cli.supervise, tcopy_cli.process.confine, tcopy_cli.trace.wire, tcopy_cli.cli;"
        "print(sorted(m for m in ('torch', 'numpy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@needs_seccomp
def test_seccomp_program_shape() -> None:
    """Every instruction is 8 bytes, every jump stays inside the program, and it ends refusing with ENOSYS."""
    import struct

    from tcopy_cli.process import libseccomp

    for gpu in (False, True):
        calls = seccomp.policy(1234, gpu=gpu)
        code = seccomp.program(calls, libseccomp.native_arch() or 0, seccomp.resolved(calls))
        assert len(code) % 8 == 0
        count = len(code) // 8
        assert count < 4096
        for i in range(count):
            op, jt, jf, k = struct.unpack_from("=HBBI", code, i * 8)
            if op == 0x05:  # BPF_JA
                assert i + 1 + k < count
            elif op & 0x07 == 0x05:  # conditional jumps
                assert i + 1 + max(jt, jf) < count
        assert struct.unpack_from("=HBBI", code, (count - 1) * 8) == (0x06, 0, 0, seccomp.ENOSYS)


@needs_landlock
def test_the_current_directory_is_not_readable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "notes.txt").write_text("private")
    monkeypatch.chdir(tmp_path)
    results = in_worker('import os\nattempt("cwd", lambda: open("notes.txt").read())')
    assert_refused(results, "cwd")


def test_version_verbose_names_what_is_available() -> None:
    done = tcopy("--version", "--verbose", env=environ(PYTHONPATH=str(ROOT)), timeout=None)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.splitlines()[-1] == f"confinement available here: {confine.available()}"
    assert ("landlock" in out) == LANDLOCK and ("seccomp" in out) == SECCOMP


def _expected_confinement() -> str:
    parts = (("landlock", LANDLOCK), ("seccomp", SECCOMP), ("namespaces", NAMESPACES), ("rlimits", LINUX))
    return "+".join(name for name, on in parts if on) or "none"


def _spy_on_workers(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Record the RunInfo of every worker run the CLI starts (the real workers still run)."""
    import tcopy_cli.supervise as supervise

    real = supervise.run_in_worker
    infos: list[object] = []

    def spy(program, options, emit, start, *args, **kwargs):  # type: ignore[no-untyped-def]
        assert not options.trust

        def started(info):  # type: ignore[no-untyped-def]
            infos.append(info)
            start(info)

        return real(program, options, emit, started, *args, **kwargs)

    monkeypatch.setattr(supervise, "run_in_worker", spy)
    return infos


def test_graph_command_runs_the_script_in_the_confined_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    infos = _spy_on_workers(monkeypatch)
    result = invoke("graph", "-e", "a = torch.ones(2, requires_grad=True)\nb = (a * 2).sum()")
    assert result.exit_code == 0, result.output
    assert "SumBackward0" in result.stdout
    assert [getattr(info, "confinement", None) for info in infos] == [_expected_confinement()]


def test_compare_runs_its_experiments_in_one_confined_worker() -> None:
    from tcopy_cli.supervise import compare_in_worker
    from tcopy_cli.trace import compare as tc

    infos: list[object] = []
    exprs = ["x.clone()", "x.detach()", "x.data"]
    rows = compare_in_worker(exprs, tc.SETUPS["leaf"], "cpu", Limits(), start=infos.append)
    assert [getattr(info, "confinement", None) for info in infos] == [_expected_confinement()]
    # The same measurements as the in-process comparison (which tcopy's own tests check against torch).
    assert [tc.Comparison(**row) for row in rows] == tc.compare(exprs, tc.SETUPS["leaf"], "cpu", Limits())


def test_compare_refusal_and_timeout_come_back_from_the_worker() -> None:
    from tcopy_cli.errors import ScriptRejected, TcopyError
    from tcopy_cli.supervise import compare_in_worker

    with pytest.raises(ScriptRejected, match="the setup failed"):
        compare_in_worker(["x.clone()"], "x = undefined_name", "cpu", Limits())
    with pytest.raises(TcopyError, match=r"timeout|longer than"):
        endless = "x = torch.ones(2)\nwhile True:\n    pass"
        compare_in_worker(["x.clone()"], endless, "cpu", Limits(timeout=1, max_iterations=10**9))


def test_the_repl_keeps_one_confined_worker_and_replaces_a_stuck_one(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[int] = []
    real_popen = __import__("subprocess").Popen

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        proc = real_popen(*args, **kwargs)
        started.append(proc.pid)
        return proc

    monkeypatch.setattr("tcopy_cli.supervise.subprocess.Popen", counting)
    session = "\n".join(
        [
            "a = torch.ones(2)",
            "b = a * 3",  # the same namespace: a is still there
            "1.5 in range(10**18)",  # holds Python's lock: only killing the worker ends it
            "a",  # the fresh worker has no names
            "c = torch.zeros(1)",
            ":quit",
        ]
    )
    result = invoke("repl", "--no-color", "--timeout", "1", input=session + "\n")
    out = result.stdout
    assert result.exit_code == 0, out
    assert f"confinement {_expected_confinement()}" in out
    assert "[3., 3.]" in out  # b = a * 3 ran where a = torch.ones(2) had
    assert "TimeoutExceeded" in out and "The worker process ended" in out
    assert "NameError: name 'a' is not defined" in out
    assert "[0.]" in out
    assert len(started) == 2  # one worker for the first three statements, a fresh one after the kill


def test_without_libseccomp_the_run_goes_on_and_the_header_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TCOPY_NO_LIBSECCOMP", "1")
    infos: list = []
    steps: list = []
    run_in_worker(parse_program("a = torch.ones(2)\nb = a * 2\n", "<t>"), WorkerOptions(), steps.append, infos.append)
    parts = (("landlock", LANDLOCK), ("namespaces", NAMESPACES), ("rlimits", LINUX))
    assert infos[0].confinement == ("+".join(name for name, on in parts if on) or "none")
    assert [s.error for s in steps] == [None, None]
