"""How the parent starts a worker: its command, its environment, its resource limits.

Set in the child between fork and exec (``preexec``): ``RLIMIT_CORE`` 0 always,
``RLIMIT_FSIZE`` 0 (no file may grow), ``RLIMIT_CPU`` from ``--timeout``, on the CPU device
``RLIMIT_DATA`` = ``--max-bytes`` + ``STARTUP_DATA_HEADROOM`` (private writable memory: what
the script allocates, not the libraries torch maps; the worker lowers it once torch is
imported), and ``PR_SET_PDEATHSIG`` (the worker gets SIGKILL when tcopy ends). ``--trust``
keeps all but ``RLIMIT_FSIZE`` (a trusted script may write files).

The confined worker's environment is an allow-list (``environment``): locale, the
torch, CUDA, ROCm, OpenMP, oneDNN and BLAS settings a user sets on purpose, and what tcopy
itself sets (its own import path, then the user's ``PYTHONPATH``, since an installation may
find torch through it). Nothing else of the user's environment (API keys, tokens, paths) reaches it,
so none is in ``os.environ`` or ``/proc/self/environ`` there. ``--trust`` keeps the whole
environment.

Nothing here imports torch.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from tcopy_cli.process.privileges import die_with_parent

if TYPE_CHECKING:
    from tcopy_cli.supervise import WorkerOptions

STARTUP_DATA_HEADROOM = 2 * 1024**3
"""RLIMIT_DATA on the CPU device while the worker starts: --max-bytes plus this much, enough to
import any build of torch (private writable memory after ``import torch``, VmData: 227 MB
for torch 2.13 CPU, 792 MB for torch 2.14 CUDA 13 on the CPU). Once torch is imported the
worker lowers it to what it holds then plus --max-bytes plus ``DATA_HEADROOM``
(``tcopy_cli.process.memory``)."""

ENVIRONMENT_NAMES = frozenset(
    {
        # locale and time zone
        "LANG",
        "LANGUAGE",
        "TZ",
        # the dynamic loader: where the libraries the user chose are (CUDA, MKL, a preloaded allocator)
        "LD_LIBRARY_PATH",
        "LD_PRELOAD",
        # results the user asked to make reproducible or deterministic
        "PYTHONHASHSEED",
        "CUBLAS_WORKSPACE_CONFIG",
        "NVIDIA_TF32_OVERRIDE",
        "ATEN_CPU_CAPABILITY",
        # tests of tcopy itself
        "TCOPY_ALLOW_TEST_HOOK",
        "TCOPY_NO_LIBSECCOMP",
    }
)
ENVIRONMENT_PREFIXES = (
    "LC_",  # locale categories
    "TORCH_",  # torch's own settings (TORCH_SHOW_CPP_STACKTRACES, TORCH_DISABLE_ADDR2LINE ...)
    "PYTORCH_",  # PYTORCH_CUDA_ALLOC_CONF, PYTORCH_ENABLE_MPS_FALLBACK ...
    "CUDA_",  # CUDA_VISIBLE_DEVICES, CUDA_LAUNCH_BLOCKING, CUDA_MODULE_LOADING ...
    "CUDNN_",
    "HIP_",  # ROCm: HIP_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES, HSA_OVERRIDE_GFX_VERSION
    "ROCR_",
    "HSA_",
    "MIOPEN_",
    "OMP_",  # OpenMP: OMP_NUM_THREADS, OMP_PROC_BIND ...
    "KMP_",  # Intel OpenMP
    "GOMP_",  # GNU OpenMP
    "MKL_",
    "OPENBLAS_",
    "BLIS_",
    "VECLIB_",
    "ONEDNN_",
    "DNNL_",
    "NPY_",  # NumPy: NPY_DISABLE_CPU_FEATURES ...
)
SECRET_WORDS = ("TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "COOKIE", "SESSION")
"""A variable whose name holds one of these is left out even where its prefix is allowed."""
HOME = "/nonexistent"
"""The confined worker's HOME: nothing there can be read or written anyway, and the user's
home directory (and name) is not the script's business."""


def allowed_variable(name: str) -> bool:
    """Whether the confined worker gets the user's variable ``name``."""
    upper = name.upper()
    if any(word in upper for word in SECRET_WORDS) and name not in ENVIRONMENT_NAMES:
        return False
    return name in ENVIRONMENT_NAMES or name.startswith(ENVIRONMENT_PREFIXES)


def environment(trust: bool = False, source: dict[str, str] | None = None) -> dict[str, str]:
    """The worker's environment: the allow-list above (``trust``: everything), plus tcopy's own settings."""
    source = dict(os.environ if source is None else source)
    env = source if trust else {k: v for k, v in source.items() if allowed_variable(k)}
    if not trust:
        env["HOME"] = HOME
        env["PATH"] = ""  # it can start no program: a search path is of no use to it
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    # the user's PYTHONPATH stays: an installation may find torch through it (Landlock lets the
    # confined worker read beneath those directories, nothing more)
    paths = [package_root] + [p for p in source.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    env.setdefault("MALLOC_ARENA_MAX", "4")  # fewer malloc arenas: less private memory held per thread
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONSAFEPATH"] = "1"  # the current directory is not on the import path (nor readable)
    return env


def worker_command() -> list[str]:
    """How to start a worker with this interpreter (and the import path of this tcopy)."""
    return [sys.executable, "-X", "utf8", "-m", "tcopy_cli.worker"]


def preexec(options: WorkerOptions) -> Callable[[], None]:
    """Resource limits and the parent-death signal, set in the child between fork and exec."""
    import resource

    limits = options.limits
    settings: list[tuple[int, int]] = [(resource.RLIMIT_CORE, 0)]
    if not options.trust:  # a trusted script may write files (its outputs)
        settings.append((resource.RLIMIT_FSIZE, 0))
    if limits.timeout > 0:
        cpu = math.ceil(limits.timeout * max(os.cpu_count() or 1, 1)) + 10
        settings.append((resource.RLIMIT_CPU, cpu))
    if options.device.strip().lower() == "cpu":
        settings.append((resource.RLIMIT_DATA, limits.max_bytes + STARTUP_DATA_HEADROOM))
    parent = os.getpid()

    def apply() -> None:
        for which, value in settings:
            _, hard = resource.getrlimit(which)
            # RLIMIT_CPU: SIGXCPU at the soft limit, SIGKILL 5 s later.
            new_hard = value + 5 if which == resource.RLIMIT_CPU else value
            if hard != resource.RLIM_INFINITY:
                value, new_hard = min(value, hard), min(new_hard, hard)
            resource.setrlimit(which, (value, new_hard))
        die_with_parent(parent)

    return apply
