"""Where the names hold the same tensors on the same storages as at the last step, the relations
between them are the last step's.

For a few small tensors most of what observing a step costs is in what relates them, not in the
tensors themselves: storage labels and which names share memory, the version-counter groups (found
by setting counters), graph reach, the tensors autograd saved. Those follow from which objects the
names hold: where every name holds the object it held at the last step (a weak reference to it still
points at it), each on the storage object it was on then (the same, never freed: its label is the
same), and no tensor is in the autograd graph (none requires grad, none has a ``grad_fn`` or a
``.grad``, and autograd saved nothing tcopy tracks), they are what they were then:

- storage labels follow storage objects (``labels.StorageLabels``), so the labels, and which names
  share a storage, are the same;
- a tensor's version counter belongs to its C++ ``TensorImpl`` (``x.data = ...`` and ``set_`` keep
  the tensor's own counter) and changes hands only where two tensor objects swap their impls:
  ``torch.utils.swap_tensors``, which tcopy tracks (the observer drops all of this then,
  ``Observer.forget``), or ``torch._C._swap_tensor_impl``, which it calls and which anyone may call
  without it (and with weak references held). So each tensor's impl is compared too (``_cdata``):
  where every one is the same, the counter groups and their labels are the same;
- with no graph there is no reach, and nothing saved to check.

Everything else is read again from each tensor (``Observer._record``): its values (by content, or
the large tensor's summary as ``trace.unchanged`` allows), version, sizes, strides, offset, memory
and flags. Tensors in containers the names do not list, and the bytes they use, are counted again.
Any difference here, an array among the names, or the ``--graph`` view, and the step is observed in
full.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

import torch

from tcopy_cli.trace.compat import storage_objects_preserved
from tcopy_cli.trace.graph import safe_grad_fn
from tcopy_cli.trace.records import TensorRecord

_PLAIN = (torch.Tensor, torch.nn.Parameter)


@dataclass
class Kept:
    """A tensor the names held at the last step, the storage object it was on, and its record then
    (its relations to the others)."""

    tensor: weakref.ref[torch.Tensor]
    storage: weakref.ref[Any]
    record: TensorRecord
    impl: int
    """The address of the tensor's C++ ``TensorImpl`` (``_cdata``), which holds its version counter."""
    key: tuple[Any, ...] | None = None
    """``place(t)`` when its record was last made, where its elements lie inside its storage."""


def place(t: torch.Tensor, storage: Any) -> tuple[Any, ...]:
    """What a tensor's record says of it besides its values and its relations: version, memory,
    sizes, strides, offset, dtype, device (``requires_grad``, ``grad_fn`` and ``.grad`` are checked
    by ``Steady.again``)."""
    return (t._version, t.data_ptr(), storage.nbytes(), t.shape, t.stride(), t.storage_offset(), t.dtype, t.device)


class Steady:
    """The last step's names, objects and storage objects, where a step after it may use its relations."""

    def __init__(self) -> None:
        self._kept: list[tuple[str, Kept]] | None = None
        self._cut: dict[str, int] = {}
        self._listed: set[int] = set()
        self._enabled = storage_objects_preserved()
        """Off where torch makes a new storage object at each ``untyped_storage()`` (2.1): a storage is
        then not known by its object."""

    def reset(self) -> None:
        """Use nothing of the last step (tensors are about to be swapped)."""
        self._kept = None

    def remember(
        self,
        named: list[tuple[str, Any]],
        cut: dict[str, int],
        listed: set[int],
        records: dict[str, TensorRecord],
        arrays: int,
    ) -> None:
        """The step observed in full: keep what the next one compares, where its relations may be reused."""
        self._kept = None
        if arrays or not self._enabled:
            return
        kept: list[tuple[str, Kept]] = []
        for name, t in named:
            record = records.get(name)
            storage = _plain_storage(t)
            if (
                record is None
                or storage is None
                or record.requires_grad
                or record.grad_fn is not None
                or record.grad is not None
                or record.version < 0
            ):
                return
            kept.append((name, Kept(weakref.ref(t), weakref.ref(storage), record, t._cdata)))
        self._kept, self._cut, self._listed = kept, dict(cut), set(listed)

    def again(
        self, named: list[tuple[str, Any]], cut: dict[str, int], listed: set[int]
    ) -> list[tuple[str, torch.Tensor, Any, Kept]] | None:
        """(name, tensor, storage, last record) for each name where the last step's relations hold
        (see the module), else None."""
        kept = self._kept
        if kept is None or len(kept) != len(named) or cut != self._cut or listed != self._listed:
            return None
        out: list[tuple[str, torch.Tensor, Any, Kept]] = []
        for (name, value), (last_name, k) in zip(named, kept):
            t = k.tensor()
            if name != last_name or t is None or t is not value or t._cdata != k.impl:
                return None
            storage = _plain_storage(t)
            if storage is None or storage is not k.storage():
                return None
            if t.requires_grad or safe_grad_fn(t) is not None or t.grad is not None:
                return None
            out.append((name, t, storage, k))
        return out


def _plain_storage(t: Any) -> Any:
    """The storage object of a plain strided tensor, else None."""
    if type(t) not in _PLAIN or t.layout is not torch.strided:
        return None
    try:
        return t.untyped_storage()
    except (RuntimeError, NotImplementedError):
        return None


__all__ = ["Kept", "Steady", "place"]
