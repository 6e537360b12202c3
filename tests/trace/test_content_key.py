"""The observer's content key: the exact bytes of a small tensor's values, however they are laid out."""

from __future__ import annotations

import pytest
import torch

from tcopy_cli.pipeline import run_source
from tcopy_cli.trace.summary import content_key


def _bytes_of_values(t: torch.Tensor) -> bytes:
    """The values' bytes in row-major order, computed the slow, obvious way."""
    if t.numel() == 0:
        return b""
    plain = t.resolve_conj().resolve_neg().clone(memory_format=torch.contiguous_format).reshape(-1)
    return plain.view(torch.uint8).numpy().tobytes()


CASES = {
    "signed zeros": lambda: torch.tensor([0.0, -0.0]),
    "conjugate view": lambda: torch.tensor([1 + 2j]).conj(),
    "negative view": lambda: torch.tensor([1 + 2j]).conj().imag,
    "transposed": lambda: torch.arange(6.0).reshape(2, 3).t(),
    "empty": lambda: torch.tensor([], dtype=torch.float64),
    "zero-dim": lambda: torch.tensor(3),
    "bool": lambda: torch.tensor([True, False]),
    "bfloat16": lambda: torch.ones(2, dtype=torch.bfloat16),
    "offset view": lambda: torch.tensor([1, 2, 3])[1:],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_key_is_the_values_bytes(name: str) -> None:
    t = CASES[name]()
    key = content_key(t, 100)
    if key is None:  # a layout NumPy can't copy: the caller reads the values without the cache
        return
    assert key == (t.dtype, tuple(t.shape), _bytes_of_values(t))


def test_a_write_that_bumps_no_version_still_shows() -> None:
    """Same version, other bytes: the values are read again (``.data`` and NumPy writes)."""
    steps = run_source("import numpy as np\nw = torch.zeros(3)\nw.data.add_(1)\nn = w.numpy()\nn[0] = 7\n").steps
    values = [s.tensors["w"].values for s in steps[1:]]
    assert values == [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [7.0, 1.0, 1.0]]
    assert {s.tensors["w"].version for s in steps[1:]} == {0}  # neither write went through w's own counter
