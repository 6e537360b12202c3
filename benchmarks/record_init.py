"""The records' direct ``__init__`` (trace/records.py) against the one ``dataclass`` generates.

Builds each frozen record the worker makes per step many times with both and prints the ratio.
Run: ``python benchmarks/record_init.py``.
"""

from __future__ import annotations

import dataclasses
import timeit

from tcopy_cli.trace import records


def tensor_args() -> dict[str, object]:
    return dict(shape=[3], dtype="float32", device="cpu", values=[1.0, 2.0, 3.0], preview="", data_ptr=1,
                storage="S1", storage_offset=0, shares_memory_with=[], requires_grad=False, is_leaf=True,
                grad_fn=None, grad=None, version=0)  # fmt: skip


def main() -> None:
    cls = records.TensorRecord
    direct = cls.__init__
    plain = dataclasses.dataclass(frozen=True)(type("Plain", (), {"__annotations__": cls.__annotations__,
        **{f.name: f.default for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING},
        **{f.name: dataclasses.field(default_factory=f.default_factory) for f in dataclasses.fields(cls)
           if f.default_factory is not dataclasses.MISSING}}))  # fmt: skip
    plain.__module__ = records.__name__
    args = tensor_args()
    n = 200_000
    t_direct = min(timeit.repeat(lambda: cls(**args), number=n, repeat=5))
    cls.__init__ = plain.__init__  # type: ignore[method-assign]
    try:
        t_plain = min(timeit.repeat(lambda: cls(**args), number=n, repeat=5))
    finally:
        cls.__init__ = direct  # type: ignore[method-assign]
    print(f"TensorRecord: direct {t_direct / n * 1e9:.0f} ns, dataclass {t_plain / n * 1e9:.0f} ns, "
          f"ratio {t_plain / t_direct:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
