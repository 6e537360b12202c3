"""Golden files of what a user sees, with volatile fields normalised.

Regenerate after an intended change with ``TCOPY_UPDATE_GOLDEN=1 pytest tests/render/test_render.py``
and review the diff: the golden files show exactly what a user sees.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
import torch
from cli_runs import invoke
from recorded import run_cli

from tcopy_cli import __version__
from tcopy_cli.engine import run_source
from tcopy_cli.render.cells import autograd_summary, short_preview

GOLDEN = Path(__file__).parent / "golden"
# torch's own messages and printing differ between releases; the golden files were
# recorded with this one (other versions still run every non-golden test).
GOLDEN_TORCH = "2.13."
UPDATE = os.environ.get("TCOPY_UPDATE_GOLDEN") == "1"

SCRIPT = """\
# Views, clones and an in-place error
import torch
base = torch.arange(6.0, requires_grad=True)
# A slice is a view: same storage, offset 2
tail = base[2:]
c = base.clone()
pair = [c, base.detach()]
y = c.sigmoid()
y.mul_(2)
print(f"y is now {y.sum().item():.2f}")
y.sum().backward()
"""


def normalise(text: str) -> str:
    """Replace what differs between runs and machines."""
    text = re.sub(r"0x[0-9a-f]+", "<ptr>", text)
    text = re.sub(r"(?<=\W)\d{9,}(?=\W)", "<ptr>", text)
    text = re.sub(r"(?m)^confinement .*$", "confinement <confinement>", text)  # differs by kernel
    text = re.sub(r"confinement `[^`]*`", "confinement `<confinement>`", text)
    text = re.sub(r'"confinement": "[^"]*"', '"confinement": "<confinement>"', text)
    text = text.replace(torch.__version__, "<torch>").replace(f"tcopy {__version__}", "tcopy <version>")
    return "\n".join(line.rstrip() for line in text.splitlines()) + "\n"


def check_golden(name: str, actual: str) -> None:
    path = GOLDEN / name
    if UPDATE or not path.exists():
        if not UPDATE:
            pytest.fail(f"golden file {path} missing; run with TCOPY_UPDATE_GOLDEN=1 to create it")
        path.parent.mkdir(exist_ok=True)
        path.write_text(actual)
        return
    assert actual == path.read_text(), f"{name} differs from the golden file (TCOPY_UPDATE_GOLDEN=1 regenerates)"


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("table-80.txt", ["--width", "80"]),
        ("table-140.txt", ["--width", "140"]),
        ("table-only-changed.txt", ["--width", "100", "--only-changed"]),
        ("markdown.md", ["--format", "markdown"]),
        ("json.jsonl", ["--format", "json"]),
    ],
)
def test_golden(name: str, args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not torch.__version__.startswith(GOLDEN_TORCH):
        pytest.skip(f"golden files were recorded with torch {GOLDEN_TORCH}x")
    (tmp_path / "demo.py").write_text(SCRIPT)
    # Run from the script's folder: the header names the script as given, so its wrap does not
    # depend on how long the temporary path is on the machine that runs the tests.
    monkeypatch.chdir(tmp_path)
    result = invoke("run", "demo.py", *args)
    assert result.exit_code == 1  # the script ends in an error step
    check_golden(name, normalise(result.stdout))


def test_json_lines_are_strict_json() -> None:
    script = "a = torch.tensor([float('nan'), float('inf'), -float('inf'), 1.0])\nc = torch.tensor([1+2j])"
    result = run_cli(["run", "-e", script, "-f", "json"])
    assert result.exit_code == 0
    for line in result.stdout.splitlines():
        json.loads(line, parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))
    steps = [json.loads(x) for x in result.stdout.splitlines()][1:-1]
    assert steps[0]["tensors"]["a"]["values"] == ["nan", "inf", "-inf", 1.0]
    assert steps[1]["tensors"]["c"]["values"] == ["(1+2j)"]


def test_narrow_table_keeps_essentials() -> None:
    trace = run_source("a = torch.ones(2, requires_grad=True)\nb = a * 2")
    rec = trace.steps[-1].tensors
    assert autograd_summary(rec["a"]) == "leaf+grad"
    assert autograd_summary(rec["b"]) == "MulBackward0"
    assert short_preview("x" * 100, 10) == "x" * 9 + "…"


def test_large_tensor_summary_comes_from_the_tensor() -> None:
    trace = run_source("torch.manual_seed(0)\nbig = torch.randn(1000, 300)")
    rec = trace.steps[-1].tensors["big"]
    torch.manual_seed(0)
    ref = torch.randn(1000, 300)
    assert rec.values is None
    head = [float(x) for x in re.findall(r"-?\d+\.\d*(?:e-?\d+)?", rec.preview.split("…")[0])]
    assert head == pytest.approx(ref.view(-1)[:6].tolist(), abs=1e-3)
    stats = re.search(r"min (\S+) max (\S+) mean (\S+)", rec.preview)
    assert stats is not None
    assert float(stats[1]) == pytest.approx(ref.min().item(), abs=1e-3)
    assert float(stats[2]) == pytest.approx(ref.max().item(), abs=1e-3)
    assert float(stats[3]) == pytest.approx(ref.mean().item(), abs=1e-3)
