"""tcopy: run a short PyTorch script step by step and see what each operation did.

The small public API::

    from tcopy_cli import run_script
    trace = run_script("a = torch.ones(2, requires_grad=True)\nb = a.clone()")
    trace.steps[-1].tensors["b"].grad_fn   # 'CloneBackward0'

Importing this package does not import torch; ``run_script`` does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__version__ = "0.1.0"

from tcopy_cli.limits import DEFAULT_MAX_VALUES

if TYPE_CHECKING:
    from tcopy_cli.trace import Trace


def run_script(
    source: str,
    device: str = "cpu",
    keep_going: bool = False,
    max_values: int = DEFAULT_MAX_VALUES,
) -> Trace:
    """Run ``source`` with CPython in this process and return every step, explained (see
    tcopy_cli.trace.Trace). Not confined: run untrusted scripts with ``tcopy run``."""
    from tcopy_cli.pipeline import run_source

    return run_source(source, device=device, keep_going=keep_going, max_values=max_values)


__all__ = ["__version__", "run_script"]
