"""Imports: the allowed modules bind as in Python. Each runs through tcopy and under plain Python."""

from __future__ import annotations

import pytest

from script.snippets import (
    assert_same_as_python,
    last,
)

# --- imports -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "src",
    [
        "import torch\nprint(torch.ones(2))",
        "import torch as T\nprint(T.zeros(2, dtype=T.int64))",
        "import copy\nprint(copy.deepcopy([1, [2]]), copy.copy((3,)))",
        "import math\nprint(math.sqrt(16), math.pi, math.floor(2.5), math.isclose(0.1 + 0.2, 0.3))",
        "from copy import deepcopy\nprint(deepcopy({'a': [1]}))",
        "from math import sqrt\nprint(sqrt(2.0))",
        "from math import sqrt as root, pi\nprint(root(9), pi)",
        "import torch, math\nprint(torch.tensor(math.e))",
    ],
)
def test_imports(src: str) -> None:
    trace = assert_same_as_python(src)
    assert trace.steps[0].source.startswith(("import", "from"))


def test_deepcopy_of_a_tensor_makes_new_storage() -> None:
    trace = assert_same_as_python(
        """
        from copy import deepcopy
        a = torch.ones(2, requires_grad=True)
        b = deepcopy(a)
        print(b, b.is_leaf, b.data_ptr() == a.data_ptr())
        """
    )
    rec = last(trace).tensors
    assert rec["a"].storage != rec["b"].storage
    assert rec["b"].is_leaf and rec["b"].requires_grad
