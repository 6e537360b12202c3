"""A large tensor's preview: range, mean, standard deviation and a histogram, measured on its device."""

from __future__ import annotations

import re

import pytest
import torch

from tcopy_cli.trace.summary import summarize

STATS = re.compile(r"min (\S+) max (\S+) mean (\S+) std (\S+) hist (.{8})")


@pytest.mark.parametrize(
    "tensor",
    [
        torch.randn(128, 1568, generator=torch.Generator().manual_seed(0)) * 0.01,
        torch.randn(32, 1, 28, 28, generator=torch.Generator().manual_seed(1)),
        torch.randn(300, 400, generator=torch.Generator().manual_seed(2)).t(),  # not contiguous
        torch.randint(0, 10, (500,), generator=torch.Generator().manual_seed(3)),
        torch.randn(300, generator=torch.Generator().manual_seed(4)).half(),
    ],
    ids=["matrix", "images", "transposed", "ints", "half"],
)
def test_std_and_histogram_match_the_tensor(tensor: torch.Tensor) -> None:
    m = STATS.search(summarize(tensor))
    assert m is not None, summarize(tensor)
    exact = tensor.double()
    assert float(m[1]) == pytest.approx(exact.min().item(), rel=1e-3, abs=1e-6)
    assert float(m[2]) == pytest.approx(exact.max().item(), rel=1e-3, abs=1e-6)
    assert float(m[4]) == pytest.approx(exact.std().item(), rel=5e-3 if tensor.is_floating_point() else 0.1)
    bars = m[5]
    assert len(bars) == 8 and bars[0] != " " and bars[-1] != " "  # the ends hold the min and the max
    assert "█" in bars


def test_the_spread_of_values_far_from_zero_is_not_lost_to_rounding() -> None:
    tensor = 1000.0 + torch.randn(400, generator=torch.Generator().manual_seed(5)) * 1e-3
    m = STATS.search(summarize(tensor))
    assert m is not None
    assert float(m[4]) == pytest.approx(tensor.double().std().item(), rel=0.1)


def test_no_spread_for_nan_or_a_constant() -> None:
    assert " std " not in summarize(torch.full((200,), float("nan")))
    constant = summarize(torch.ones(200))
    assert " std 0." in constant and " hist " not in constant


def test_a_sampled_tensor_says_so_after_its_statistics() -> None:
    text = summarize(torch.randn(2000, 1000, generator=torch.Generator().manual_seed(6)))
    assert re.search(r"std \S+ hist .{8} \(of [\d,]+ sampled values\)$", text)
