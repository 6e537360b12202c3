"""The confined worker's memory ceiling: ``RLIMIT_DATA``, set once torch is imported.

``RLIMIT_DATA`` bounds a process's private writable memory (the heap, anonymous
mappings, thread stacks, the writable data of loaded libraries), which is where every
tensor, array and Python object a script makes lives; libraries mapped from files are
not counted, so a CUDA build of torch (about 3.5 GB of mapped libraries) needs no room
for them, as an address-space limit did. torch's CPU allocator, NumPy and Python all
report an allocation the kernel refuses as an error (``RuntimeError: DefaultCPUAllocator:
can't allocate memory``, ``MemoryError``), so the statement fails and the run goes on to
report it.

The parent starts the worker with ``--max-bytes`` + ``STARTUP_DATA_HEADROOM``
(``process.spawn``); after ``import torch`` the worker lowers the limit, soft and hard,
to the private memory it holds then (its intra-op thread pool started), plus
``--max-bytes``, plus ``DATA_HEADROOM`` for Python, the observer and a statement's
temporaries, plus ``STACK_PER_CPU`` per CPU for the stacks of threads torch starts later.
The seccomp filter refuses shared anonymous mappings and ``MAP_GROWSDOWN`` (counted as stack),
which this limit would not count; ``RLIMIT_AS`` (what is mapped then + twice ``--max-bytes`` +
``ADDRESS_HEADROOM``) bounds the page tables of huge reservations that are only read.

Measured (VmData after ``import torch``; after a 50-step MLP and a 10-step CNN with Adam):
torch 2.13 CPU build 227 MB, 340 MB; torch 2.14 CUDA 13 build on the CPU 792 MB, 911 MB.

Nothing here imports torch at module level.
"""

from __future__ import annotations

DATA_HEADROOM = 512 * 1024**2
"""Private memory the confined worker may hold beyond --max-bytes and what it held once torch was imported."""
ADDRESS_HEADROOM = 16 * 1024**3
"""Address space beyond what is mapped once torch is imported and twice --max-bytes: glibc's malloc
arenas (64 MiB reserved each), thread stacks, files read through mmap. Page tables for all of it:
at most about 40 MB."""
STACK_PER_CPU = 16 * 1024**2
"""Room for the stacks of threads torch starts later (its inter-op pool: one per CPU, 8 MiB each,
counted whole by RLIMIT_DATA); the intra-op pool is started before the limit is measured."""


def private_memory() -> int:
    """This process's private writable memory now (VmData, bytes); 0 if unknown."""
    return _status_bytes("VmData:")


def _status_bytes(field: str) -> int:
    """A size in this process's /proc/self/status (bytes); 0 if unknown."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def set_ceiling(max_bytes: int) -> int:
    """Import torch and NumPy, then bound private memory to what they hold + ``max_bytes`` + ``DATA_HEADROOM``.

    Returns the limit set (0 where none could be set).
    """
    import os
    import resource

    import numpy  # noqa: F401  (what the libraries hold once imported is not the script's)
    import torch

    torch.ones(1 << 16).add_(1).sum()  # starts the intra-op (OpenMP) pool: its threads' stacks are torch's
    held = private_memory()
    if not held:
        return 0
    limit = _lower(resource.RLIMIT_DATA, held + max_bytes + DATA_HEADROOM + STACK_PER_CPU * (os.cpu_count() or 1))
    if limit:
        _bound_address_space(max_bytes)
    return limit


def _lower(which: int, limit: int) -> int:
    """Set resource limit ``which``, soft and hard, to ``limit`` (at most its hard value); the limit set, 0 if none."""
    import resource

    _, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    try:
        resource.setrlimit(which, (limit, limit))
    except (OSError, ValueError):
        return 0
    return limit


def _bound_address_space(max_bytes: int) -> None:
    """``RLIMIT_AS``: what is mapped now (the libraries included) + twice ``--max-bytes`` + ``ADDRESS_HEADROOM``.

    Memory nobody wrote costs nothing, but the page tables of a huge reservation read page by page do
    (2 GB per TiB), and RLIMIT_DATA does not count read-only mappings: this bounds them."""
    import resource

    mapped = _status_bytes("VmSize:")
    if not mapped:
        return
    _lower(resource.RLIMIT_AS, mapped + 2 * max_bytes + ADDRESS_HEADROOM)
