"""Which large tensors provably hold the bytes they held at the last step.

A tensor of more than ``--max-values`` elements is shown as a summary (range, mean, spread and a
histogram), which reads every element: for a model's parameters that is most of what observing a
step costs, step after step, though most steps leave most parameters alone. The summary made at
the last step is shown again only where nothing can have written the tensor's memory since:

- the same tensor object, on the same storage, with the same sizes, strides, offset, dtype and
  device, and the same version counter (every in-place write through torch bumps the counter
  of the tensors it writes, and of their views and ``detach()``-ed aliases, which share it);
- no operation since the last step wrote a tensor on that storage: an operation that writes a
  tensor moves that tensor's counter (a fused or mixed-precision kernel, or batch norm updating
  its running statistics, does not: see ``UNCOUNTED``; such a call is taken as writing every
  tensor it is given), and a write through another tensor on the same memory
  (``.data``, whose counter is its own) moves only that one's. The dispatch record
  (``engine.recorder``) sees each operation, with the versions of its tensors before and after;
- memory torch allocated (a resizable storage): a tensor made on NumPy's memory
  (``torch.from_numpy``, ``as_tensor``, DLPack) can be written through the array, which no
  operation records;
- no operation ever handed that memory out of torch's reach (``.numpy()``, ``__array__``,
  ``data_ptr()``, ``untyped_storage()`` ...): what the script does with it then is unseen.

Anything else (a tensor subclass, a sparse tensor, an inference tensor with no counter) is
summarised again at every step, as every tensor was before.

A storage handed out is known by its ``StorageImpl`` as well as by its memory: ``resize_`` moves a
storage's memory, and the ``UntypedStorage`` the script holds writes the new memory.

The record sees only the calls the script's own thread makes with the mode on. Code that runs while
a recorded call runs (the mode is off then: hooks during ``backward``, ``autograd.grad``, the function
of ``apply_``/``map_``/``map2_``, a tensor subclass's ``__torch_function__``, the pack hook of
``saved_tensors_hooks`` as any call saves a tensor), a function ``torch.compile`` made or one a
``torch.jit``/``torch.fx`` tracer runs (without the mode, ``engine.watched``) and code on another
thread (the mode is the script thread's) make calls the record never sees; where any may have run
since the last step, every tensor is summarised again. Once the script has started a thread, that is
every step to the end of the run.
"""

from __future__ import annotations

import functools
import sys
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

import torch

ESCAPING = frozenset(
    {
        "numpy",
        "__array__",
        "__dlpack__",
        "data_ptr",
        "untyped_storage",
        "storage",
        "_typed_storage",
        "share_memory_",
    }
)
"""Calls that give the script a way to write a tensor's memory that torch does not see."""

CALLING_BACK = frozenset({"backward", "grad", "apply_", "map_", "map2_", "deepcopy"})
"""Calls that run Python code (hooks, a custom Function's backward, a per-element function, the
``__deepcopy__`` of what a tensor's ``__dict__`` holds) while they run, with the dispatch mode off:
the writes that code makes are not recorded."""

OWN_THREADS = "tcopy-"
"""The prefix of the names of tcopy's own threads (the watchdog), which write no tensor."""

UNCOUNTED = ("_fused", "_amp_")
"""The prefixes of the fused kernels (``_fused_adam_``, ``_fused_adamw_``, ``_fused_sgd_``, the
optimizers' ``fused=True`` step ...) and of the mixed-precision ones (``GradScaler``'s
``_amp_foreach_non_finite_check_and_unscale_`` of the gradients, ``_amp_update_scale_``), which
write their tensors in place without moving their version counters."""

UNCOUNTED_IN = ("batch_norm",)
"""Parts of the names of other calls that write without moving version counters: batch norm in
training updates ``running_mean``/``running_var`` in place (``F.batch_norm``, ``torch.batch_norm``,
``native_batch_norm`` ...)."""


@functools.lru_cache(maxsize=1024)
def _uncounted(name: str) -> bool:
    """Whether a call called ``name`` may write a tensor it is given without moving its counter."""
    return name.startswith(UNCOUNTED) or any(part in name for part in UNCOUNTED_IN)


_PLAIN = (torch.Tensor, torch.nn.Parameter)

Summary = tuple[Any, str]
_Kept = tuple[tuple[Any, ...], "weakref.ref[torch.Tensor]", Summary]


class Unchanged:
    """The summaries made at the last step, and what operations touched since (see the module)."""

    def __init__(self) -> None:
        self.touched: set[int] = set()
        """Data pointers of the storages an operation wrote since the last step (through any tensor on
        them: a write through ``.data`` moves that alias's own counter, not the tensor's)."""
        self.escaped: set[int] = set()
        """Data pointers of the storages the script may write out of torch's sight (for good)."""
        self.escaped_storages: set[int] = set()
        """The same storages by their ``StorageImpl`` (``_cdata``): ``resize_`` moves the memory of a
        storage the script holds."""
        self.all_touched = False
        """Code the record does not see may have run since the last step (see the module)."""
        self.threads_started = False
        """A thread was started while the script ran: it may write at any time, unseen."""
        self._last: dict[int, _Kept] = {}
        self._now: dict[int, _Kept] = {}

    def before(self, name: str, args: Iterable[Any], calls_back: bool = False) -> list[tuple[torch.Tensor, int]]:
        """An operation called ``name`` is about to run on ``args``: the tensors among them (in lists
        and tuples too), with their versions, for ``after``. ``calls_back``: it may run Python code
        (``CALLING_BACK``, a tensor subclass's ``__torch_function__``) whose calls are not recorded."""
        if calls_back:
            self.all_touched = True
        seen: list[tuple[torch.Tensor, int]] = []
        for value in args:
            if isinstance(value, torch.Tensor):
                self._before(value, name, seen)
            elif isinstance(value, (list, tuple)):
                for item in value:
                    if isinstance(item, torch.Tensor):
                        self._before(item, name, seen)
        return seen

    def _before(self, t: torch.Tensor, name: str, seen: list[tuple[torch.Tensor, int]]) -> None:
        if _uncounted(name):  # taken as writing every tensor it is given
            self._mark(t, self.touched)
            return
        if name in ESCAPING:
            try:
                storage = t.untyped_storage()
            except (RuntimeError, NotImplementedError, ValueError):
                pass
            else:
                self.escaped.add(storage.data_ptr())
                self.escaped_storages.add(storage._cdata)
        try:
            seen.append((t, t._version))
        except RuntimeError:  # no version counter to tell a write by: taken as written
            self._mark(t, self.touched)

    def after(self, seen: list[tuple[torch.Tensor, int]]) -> None:
        """The operation ended (returned or raised): the storages of the tensors it wrote (their
        version counters moved) are touched."""
        for t, version in seen:
            if t._version != version:
                self._mark(t, self.touched)

    @staticmethod
    def _mark(t: torch.Tensor, storages: set[int]) -> None:
        try:
            storages.add(t.untyped_storage().data_ptr())
        except (RuntimeError, NotImplementedError, ValueError):
            pass

    def summary(self, t: torch.Tensor, make: Callable[[], Summary]) -> Summary:
        """``make()``, or the summary made at the last step where ``t`` provably holds the same bytes."""
        key = self._key(t)
        if key is None:
            return make()
        last = self._last.get(id(t))
        if last is not None and last[0] == key and last[1]() is t and not self._written(key[0]):
            found = last[2]
        else:
            found = make()
        self._now[id(t)] = (key, weakref.ref(t), found)
        return found

    def _key(self, t: torch.Tensor) -> tuple[Any, ...] | None:
        ptr = self._seen_storage(t)
        if ptr is None:
            return None
        try:
            version = t._version
        except RuntimeError:  # an inference tensor has no counter
            return None
        return (ptr, version, t.shape, t.stride(), t.storage_offset(), t.dtype, t.device, t.is_conj(), t.is_neg())

    def unwritten(self, t: torch.Tensor) -> bool:
        """Whether nothing can have written ``t``'s memory since the last step (the saved-tensor check
        compares a saved tensor with its copy only where something may have)."""
        ptr = self._seen_storage(t)
        return ptr is not None and not self._written(ptr)

    def _seen_storage(self, t: torch.Tensor) -> int | None:
        """The data pointer of ``t``'s storage where every write to it can be seen (a plain strided
        tensor on memory torch allocated and never handed out), else None."""
        if type(t) not in _PLAIN or t.layout is not torch.strided:
            return None
        try:
            storage = t.untyped_storage()
            ptr = storage.data_ptr()
        except (RuntimeError, NotImplementedError):  # no storage
            return None
        if not storage.resizable() or ptr in self.escaped or storage._cdata in self.escaped_storages:
            return None
        return ptr

    def _written(self, ptr: int) -> bool:
        """Whether something may have written the storage at ``ptr`` since the last step."""
        return ptr in self.touched or self.unseen()

    def unseen(self) -> bool:
        """Whether code the record does not see may have written any tensor since the last step."""
        if self.all_touched or self.threads_started:
            return True
        ours = (threading.main_thread(), threading.current_thread())
        if any(th not in ours and not th.name.startswith(OWN_THREADS) for th in threading.enumerate()):
            self.all_touched = True  # (a thread started before the run, still running)
        return self.all_touched

    @contextmanager
    def watching_threads(self) -> Iterator[None]:
        """While the script runs, a thread started by ``threading`` tells ``threads_started`` (by the
        trace hook ``threading`` installs in each new thread; it then takes itself off)."""

        def started(_frame: FrameType, _event: str, _arg: Any) -> None:
            if not threading.current_thread().name.startswith(OWN_THREADS):
                self.threads_started = True
            sys.settrace(None)

        previous = threading.gettrace()
        threading.settrace(started)
        try:
            yield
        finally:
            threading.settrace(previous)  # type: ignore[arg-type]

    def step_done(self) -> None:
        """The step's summaries are made: they are the last step's now."""
        self._last, self._now = self._now, {}
        self.touched.clear()
        self.all_touched = False

    def forget(self, t: torch.Tensor) -> None:
        """Hold no weak reference to ``t`` (about to be swapped: ``torch.utils.swap_tensors``)."""
        self._last.pop(id(t), None)
        self._now.pop(id(t), None)


__all__ = ["ESCAPING", "Unchanged"]
