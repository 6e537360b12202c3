"""Column widths of the step table: the fewest terminal lines, counted as the table is drawn."""

from __future__ import annotations

import io
import random
import re
from functools import partial
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from recorded import run_cli
from rich.console import Console

from tcopy_cli.limits import DEFAULT_MAX_VALUES
from tcopy_cli.render import layout, table
from tcopy_cli.render.names import short_names, shortened
from tcopy_cli.render.table import TableRenderer
from tcopy_cli.render.values import Stats
from tcopy_cli.trace.records import Step, TensorRecord
from tcopy_cli.trace.summary import tensor_values
from tcopy_cli.trace.values import format_number

NAMES = [
    "x",
    "w",
    "h[0]",
    "model.0.weight",
    "model.0.bias",
    "layers.11.attention.q_proj.weight",
    "a_name_of_18_chars",
    "discriminator.2.weight",
    "net.backbone.layer4.1.conv2.weight",
    "f:encoder.block.feature_extractor_projection.bias",
]
GRAD_FNS = [None, "MulBackward0", "MseLossBackward0", "NativeLayerNormBackward0"]
NUMBERS = st.one_of(
    st.integers(-5, 5).map(float),
    st.floats(-1e4, 1e4, allow_nan=False, width=32),
    st.sampled_from([1e-7, -3.5e9, 0.1, -0.001]),
)


@st.composite
def tensors(draw: Any) -> torch.Tensor:
    """A tensor with values a learner meets: a scalar, a vector, a matrix, or a large one."""
    shape = draw(
        st.one_of(
            st.just(()),
            st.tuples(st.integers(1, 14)),
            st.tuples(st.integers(1, 9), st.integers(1, 6)),
            st.tuples(st.integers(20, 60), st.integers(20, 60)),  # too large to list
        )
    )
    n = 1
    for d in shape:
        n *= d
    if n > 64:
        torch.manual_seed(draw(st.integers(0, 1000)))
        return torch.randn(*shape) * draw(st.sampled_from([1.0, 1e-3, 1e3]))
    return torch.tensor(draw(st.lists(NUMBERS, min_size=n, max_size=n)), dtype=torch.float32).reshape(shape)


def record(t: torch.Tensor, grad: torch.Tensor | None, grad_fn: str | None, label: int) -> TensorRecord:
    """The record the observer writes for ``t``: values and preview as ``tensor_values`` gives them."""
    values, preview = tensor_values(t, DEFAULT_MAX_VALUES)
    g = None
    if grad is not None:
        g = record(grad, None, None, 1000 + label)
    return TensorRecord(
        shape=list(t.shape), dtype="float32", device="cpu", values=values, preview=preview,
        data_ptr=4096 * label, storage=f"S{label}", storage_offset=0, shares_memory_with=[],
        requires_grad=grad is not None or grad_fn is not None, is_leaf=grad_fn is None, grad_fn=grad_fn,
        grad=g, version=0, version_counter=f"V{label}",
    )  # fmt: skip


@st.composite
def steps(draw: Any) -> Step:
    names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=6, unique=True))
    records = {}
    for i, name in enumerate(names, 1):
        t = draw(tensors())
        grad = draw(st.one_of(st.none(), st.just(t).map(lambda t: t * 0.37 - 0.011)))
        records[name] = record(t, grad, draw(st.sampled_from(GRAD_FNS)) if grad is None else None, i)
    return Step(
        index=1, line=1, source="pass", status="ok", error=None, stdout="", warnings=[], tensors=records, arrays={}
    )


def drawn(step: Step, width: int, shortest: bool, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The step as a terminal ``width`` columns wide shows it: fewest lines, or the values-first widths."""
    with monkeypatch.context() as m:
        m.setattr(table, "plan", partial(layout.plan, shortest=shortest))
        console = Console(file=io.StringIO(), width=width, color_system=None)
        renderer = TableRenderer(console)
        console.print(renderer.render_step(step, fresh=True))
        text = console.file.getvalue()  # type: ignore[attr-defined]
    return text.splitlines()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(step=steps(), width=st.integers(60, 200))
def test_fewest_lines_never_more_than_values_first(step: Step, width: int, monkeypatch: pytest.MonkeyPatch) -> None:
    values_first = drawn(step, width, False, monkeypatch)
    fewest = drawn(step, width, True, monkeypatch)
    assert len(fewest) <= len(values_first), "\n".join([*values_first, "---", *fewest])
    assert max(map(len, fewest)) <= width
    # the rows drawn (a module's parameters may share one): each begins with its mark and its name
    rows = sum(1 for line in values_first[5:] if re.match(r"[+~ ] \S", line))
    # header, rule and one line a row (plus the rule and the statement above, a blank line below)
    if len(values_first) == rows + 5:  # nothing wraps: drawn exactly as before
        assert fewest == values_first


def test_names_never_wrap(monkeypatch: pytest.MonkeyPatch) -> None:
    """On 300 random steps at random widths: every name on one line, the first of its row."""
    names = [
        *NAMES,
        "emb['token_embedding_weight_matrix_large']",
        "xs[10][3]",
        "generator.main.0.weight",
    ]
    rng = random.Random(2)
    for _ in range(300):
        records = {}
        for i, name in enumerate(rng.sample(names, rng.randint(1, 6)), 1):
            shape = rng.choice([(), (rng.randint(1, 14),), (rng.randint(1, 9), rng.randint(1, 6)), (30, 30)])
            torch.manual_seed(rng.randint(0, 1000))
            t = torch.randn(shape) * rng.choice([1.0, 1e-3, 1e3])
            grad = t * 0.37 if rng.random() < 0.4 else None
            records[name] = record(t, grad, None if grad is not None else rng.choice([None, "MulBackward0"]), i)
        step = Step(
            index=1, line=1, source="pass", status="ok", error=None, stdout="", warnings=[], tensors=records, arrays={}
        )
        width = rng.choice([80, 100, 120, 160, rng.randint(60, 200)])
        lines = drawn(step, width, True, monkeypatch)
        header = next(i for i, line in enumerate(lines) if line.startswith("  name "))
        end = lines[header].index(" values") if " values" in lines[header] else len(lines[header])
        body = [line for line in lines[header + 2 :] if line and not line.startswith("  •")]
        shown = "\n".join(lines)
        # every row is new (+): a name cell is filled exactly on a row's first line
        assert all((line[0] == "+") == bool(line[2:end].strip()) for line in body), shown
        firsts = [line for line in body if line[0] == "+"]
        written = [line[2:end].strip() for line in firsts]
        assert len(set(written)) == len(written), shown
        # a module's row is named by the module (its values may say only "19 values": held_text)
        module = [any(n.startswith(w + ".") for n in records) for w in written]
        assert all(w in records or "…" in w or m for w, m in zip(written, module)), shown


def test_a_long_name_is_written_shorter_keeping_both_ends() -> None:
    assert shortened("encoder.layers.0.self_attn.in_proj_weight", 24)[0] == "encoder.…in_proj_weight"
    assert shortened("discriminator.2.weight", 30) == ["discriminator.2.weight"]
    assert shortened("discriminator.2.weight", 12)[0] == "…2.weight"
    assert shortened("xs[10][3]", 6)[0] == "xs…[3]"
    # two names never written alike: each takes its next way instead
    short = short_names(["model.conv1.weight", "model.conv2.weight", "x"], 14)
    assert short == {"model.conv1.weight": "…conv1.weight", "model.conv2.weight": "…conv2.weight", "x": "x"}


MLP = """\
import torch
import torch.nn as nn
import torch.nn.functional as F
torch.manual_seed(0)
x = torch.randn(16, 4)
y = torch.randn(16, 1)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
loss = F.mse_loss(model(x), y)
loss.backward()
"""


def _plain_mlp() -> dict[str, torch.nn.Parameter]:
    """The script's parameters after its backward, in plain torch (tcopy names them ``model.0.weight`` ...)."""
    torch.manual_seed(0)
    x = torch.randn(16, 4)
    y = torch.randn(16, 1)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    torch.nn.functional.mse_loss(model(x), y).backward()
    return {f"model.{name}": p for name, p in model.named_parameters()}


def _steps(out: str) -> list[str]:
    return re.split(r"^Step \d+ · ", out, flags=re.M)[1:]


def test_names_and_grad_statistics_are_not_broken_at_100_columns() -> None:
    # --all-steps: every parameter its own row (no module row)
    out = run_cli(["run", "-e", MLP, "--width", "100", "--no-explain", "--all-steps"]).stdout
    assert max(len(line) for line in out.splitlines()) <= 100
    backward = _steps(out)[-1]
    assert backward.startswith("line 9"), backward
    for name, p in _plain_mlp().items():
        # the name whole at the start of its row, never "model.0.we" over "ight"
        lines = backward.splitlines()
        at = [i for i, line in enumerate(lines) if re.match(rf"^[~+ ] {re.escape(name)} ", line)]
        assert len(at) == 1, backward
        row = [lines[at[0]]]
        row += [line for line in lines[at[0] + 1 : at[0] + 3] if line.startswith("   ")][: 1 if len(row) else 0]
        assert not lines[at[0] + len(row)].startswith("   "), backward  # never a third line
        g = p.grad
        assert g is not None
        if g.dim() == 2 and g.numel() > 8:  # the gradient as statistics: [min, max], each number whole
            number = Stats(0, 0, 0).number
            low, high = number(g.min().item(), 3), number(g.max().item(), 3)
            text = " ".join(" ".join(row).split())
            assert f"[{low}," in text and f" {high}]" in text, backward


def test_long_name_beside_long_values_keeps_its_line() -> None:
    # The values take two lines at any width they could have: the name gets what it needs,
    # since equally short layouts are told apart by the lines inside their cells.
    script = "import torch\nmodel_0_weight = torch.arange(10.0) / 7\n"
    out = run_cli(["run", "-e", script, "--width", "100"]).stdout
    lines = _steps(out)[-1].splitlines()
    at = next(i for i, line in enumerate(lines) if re.match(r"^[~+ ] model_0_weight ", line))
    col = lines[at].index("[")
    shown = " ".join(line[col:].split("  ")[0] for line in lines[at : at + 2])
    assert re.findall(r"-?\d+\.\d*", shown) == [format_number(v) for v in (torch.arange(10.0) / 7).tolist()], out


GAN = """\
import torch
import torch.nn as nn
torch.manual_seed(0)
discriminator = nn.Sequential(nn.Linear(64, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1), nn.Sigmoid())
images = torch.randn(16, 64)
d_loss = discriminator(images).mean()
d_loss.backward()
"""


@pytest.mark.parametrize("width", [80, 100])
def test_a_long_name_is_one_line_whole_or_without_its_middle(width: int) -> None:
    out = run_cli(["run", "-e", GAN, "--width", str(width), "--no-explain", "--all-steps"]).stdout
    backward = _steps(out)[-1]
    names = [
        f"discriminator.{n}"
        for n, _ in torch.nn.Sequential(
            torch.nn.Linear(64, 32), torch.nn.LeakyReLU(0.2), torch.nn.Linear(32, 1)
        ).named_parameters()
    ]
    written = [m[1] for m in re.finditer(r"^[~+ ] (\S+)", backward, flags=re.M)]
    for name in names:
        # whole, or its end kept whole with "…" for what is left out ("discriminator.…2.weight")
        (mine,) = [w for w in written if w == name or ("…" in w and name.endswith(w.rpartition("…")[2]))]
        head, _, tail = mine.rpartition("…")
        assert name.startswith(head) and tail.count(".") >= 1, (mine, backward)
    assert "discriminat\n" not in backward and not re.search(r"^ +or\.", backward, re.M), backward


def test_a_grid_stays_a_grid() -> None:
    # 120 columns show the 8x4 weight as an aligned grid; the names get their width, the grid stays.
    # --all-steps: the unchanged weight keeps its row (no note names it with --no-explain).
    out = run_cli(["run", "-e", MLP, "--width", "120", "--no-explain", "--all-steps"]).stdout
    lines = _steps(out)[-2].splitlines()  # the loss step, before any grad
    at = next(i for i, line in enumerate(lines) if re.match(r"^[~+ ] model\.0\.weight +\[\[", line))
    col = lines[at].index("[[")
    w = _plain_mlp()["model.0.weight"].detach()
    for i, expected in enumerate(w.tolist()):
        row = lines[at + i][col + 1 if i == 0 else col :].split("]")[0].lstrip(" [")
        assert [float(v) for v in row.split(",")] == pytest.approx(expected, abs=1e-3), "\n".join(lines)
