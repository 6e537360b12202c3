"""The few libseccomp functions tcopy uses, through ctypes: system call names and the ABI.

libseccomp (``libseccomp.so.2``, on essentially every glibc distribution: systemd,
Docker, podman and Chromium depend on it) knows every architecture's system call table.
tcopy asks it for two things only, so no table here is per architecture:

- ``seccomp_syscall_resolve_name``: the number of a named call on the running
  architecture, or none where the architecture lacks it (AArch64 has no ``open`` or
  ``fork``);
- ``seccomp_arch_native``: the audit architecture token the kernel puts in
  ``seccomp_data.arch`` for this process's native ABI.

Why a ctypes binding and not a package: libseccomp's own Python binding is a Cython
extension that is not published on PyPI (a third party republishes it, as a compiled
wheel from one maintainer), and ``pyseccomp`` (a ctypes wrapper of the same API) had its
last release in 2021. These two functions have been stable since libseccomp 2.2 (2015).

Why tcopy writes the BPF program itself (``tcopy_cli.process.seccomp``) instead of
calling ``seccomp_rule_add``: the filter needs "allow when argument 0 is 0 or this
process's id, otherwise EPERM" with "ENOSYS for any call not named". libseccomp 2.5
compares an argument at most once per rule, and a rule without conditions overrides
every conditional rule of the same call, so the "otherwise EPERM" can't be said there.

Nothing here imports torch.
"""

from __future__ import annotations

import ctypes
import os

_LIB: ctypes.CDLL | None = None
_LOAD_ERROR = ""
NAMES = ("libseccomp.so.2",)


def library() -> ctypes.CDLL | None:
    """libseccomp, loaded once; None if this system has none (``load_error()`` says why)."""
    global _LIB, _LOAD_ERROR
    if _LIB is not None or _LOAD_ERROR:
        return _LIB
    if os.environ.get("TCOPY_NO_LIBSECCOMP") == "1":  # tests: the run without it
        _LOAD_ERROR = "libseccomp.so.2 was not loaded (TCOPY_NO_LIBSECCOMP=1)"
        return None
    for name in NAMES:
        try:
            lib = ctypes.CDLL(name, use_errno=True)
        except OSError as exc:
            _LOAD_ERROR = f"libseccomp is not installed ({exc})"
            continue
        lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
        lib.seccomp_syscall_resolve_name.restype = ctypes.c_int
        lib.seccomp_arch_native.argtypes = []
        lib.seccomp_arch_native.restype = ctypes.c_uint32
        _LIB, _LOAD_ERROR = lib, ""
        return lib
    return None


def load_error() -> str:
    """Why ``library()`` found no libseccomp ("" if it did)."""
    library()
    return _LOAD_ERROR


class _Version(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint), ("minor", ctypes.c_uint), ("micro", ctypes.c_uint)]


def version() -> str:
    """libseccomp's version, e.g. ``2.5.4`` ("" without the library)."""
    lib = library()
    if lib is None:
        return ""
    lib.seccomp_version.restype = ctypes.POINTER(_Version)
    v = lib.seccomp_version().contents
    return f"{v.major}.{v.minor}.{v.micro}"


def native_arch() -> int | None:
    """The audit architecture token of this process's ABI (``AUDIT_ARCH_X86_64`` ...); None without libseccomp."""
    lib = library()
    return int(lib.seccomp_arch_native()) if lib is not None else None


def resolve(name: str) -> int | None:
    """The number of system call ``name`` on this architecture; None where it has no such call."""
    lib = library()
    if lib is None:
        return None
    nr = int(lib.seccomp_syscall_resolve_name(name.encode()))
    return nr if nr >= 0 else None  # libseccomp's pseudo-numbers (< 0) name calls this ABI lacks


__all__ = ["library", "load_error", "native_arch", "resolve", "version"]
