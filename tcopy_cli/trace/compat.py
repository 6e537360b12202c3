"""What the installed torch lets tcopy measure, found by trying it once.

tcopy reads a few facts through private or changing torch APIs. Each is detected by
using it the way the running release expects, on a throwaway tensor, never by checking
that a name exists (names outlive signatures). The results are cached for the process.
Where a fact can't be measured, ``degraded()`` says so in words the output repeats.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch

SetVersion = Callable[[torch.Tensor, int], None]


def torch_release() -> str:
    """The running torch's version without a local build tag (``2.1.2``)."""
    return torch.__version__.split("+")[0]


@functools.cache
def version_setter() -> SetVersion | None:
    """A function that sets one tensor's version counter, or None where torch has none.

    ``torch._C._autograd._unsafe_set_version_counter`` takes tuples of tensors and
    versions from torch 2.7 on, and one tensor and one int before that. Each form is
    tried on a throwaway tensor; the first that really sets the counter is kept.
    """
    raw = getattr(getattr(torch._C, "_autograd", None), "_unsafe_set_version_counter", None)
    if raw is None:
        return None

    def tuples(t: torch.Tensor, v: int) -> None:
        raw((t,), (v,))

    def single(t: torch.Tensor, v: int) -> None:
        raw(t, v)

    for form in (tuples, single):
        probe = torch.zeros(1)
        try:
            form(probe, 12_345)
            works = probe._version == 12_345
        except (TypeError, RuntimeError):
            works = False
        if works:
            return form
    return None


@functools.cache
def storage_objects_preserved() -> bool:
    """True when ``t.untyped_storage()`` gives the same Python object on every call.

    Then the object lives exactly as long as the storage, and a weak reference to it
    tells when the storage is freed. Older releases (2.1) make a new wrapper on each
    call, and a weak reference to one crashes the interpreter when it is collected, so
    there tcopy identifies storages by their memory instead (see labels.StorageLabels).
    """
    t = torch.zeros(1)
    return t.untyped_storage() is t.untyped_storage()


def degraded() -> list[str]:
    """Facts this torch release can't give tcopy, one sentence each (empty: none)."""
    out = []
    release = torch_release()
    if version_setter() is None:
        out.append(
            f"version counter sharing: not measurable on torch {release} "
            "(shares_version_with is always empty, so notes can't tell a .data alias from a view)"
        )
    if not storage_objects_preserved():
        out.append(
            f"storage labels: torch {release} has no lasting storage object, so a storage is followed "
            "through the tensors seen on it; one that outlives all of them gets a new label if it comes back"
        )
    return out
