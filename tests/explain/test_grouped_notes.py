"""A finding that is the same for several tensors in one step is one note naming them all.

The truth is plain PyTorch: each script runs with ``exec`` in this process, and the
versions, grads and flags it measures decide which tensors a note must name, and which
findings must stay apart (other versions, tensors that share one version counter).
"""

from __future__ import annotations

from typing import Any

import torch
from recorded import run_cli

from tcopy_cli.pipeline import run_source
from tcopy_cli.render import ViewOptions
from tcopy_cli.trace.records import Note, Step

HEAD = "import copy\nimport torch\nimport torch.nn as nn\ntorch.manual_seed(0)\n"

MLP = HEAD + (
    "x = torch.randn(5, 4)\n"
    "model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))\n"
    "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "model(x).sum().backward()\n"
    "opt.step()\n"
    "opt.zero_grad()\n"
)


def _named(namespace: dict[str, Any]) -> dict[str, torch.Tensor]:
    """The tensors of a namespace under tcopy's names (``model.0.weight`` for a module's parameter)."""
    out: dict[str, torch.Tensor] = {}
    for var, value in namespace.items():
        if isinstance(value, torch.Tensor):
            out[var] = value
        elif isinstance(value, torch.nn.Module):
            out.update({f"{var}.{p}": t for p, t in value.named_parameters()})
    return out


def _plain(script: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Plain python: (the namespace before the script's last line, the namespace after it)."""
    *first, last = script.rstrip("\n").split("\n")
    namespace: dict[str, Any] = {}
    exec("\n".join(first), namespace)
    before = {n: (t._version, t.grad, t.requires_grad) for n, t in _named(namespace).items()}
    exec(last, namespace)
    return before, namespace


def _last(script: str) -> Step:
    return run_source(script, keep_going=True).steps[-1]


def _of(step: Step, kind: str) -> list[Note]:
    return [n for n in step.explanations if n.kind == kind]


def test_a_module_s_parameters_born_at_version_1_are_one_note() -> None:
    script = HEAD + "model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))\n"
    _before, after = _plain(script)
    born = [n for n, t in _named(after).items() if t._version == 1]
    assert born == ["model.0.weight", "model.0.bias", "model.2.weight", "model.2.bias"]  # what torch says
    [made] = _of(_last(script), "relation.born-version")
    assert made.tensors == tuple(born)
    assert made.text.startswith("model.0.weight, model.0.bias, model.2.weight and model.2.bias start at version 1")
    assert "created them and each layer initialises its parameters in place" in made.text
    assert made.text.endswith("their version counters count those writes too. Nothing is wrong with them.")


def test_a_single_born_tensor_keeps_its_sentence() -> None:
    script = HEAD + "x = torch.ones(3, requires_grad=True)\nd = copy.deepcopy(x)\n"
    _before, after = _plain(script)
    assert after["d"]._version == 1
    [made] = _of(_last(script), "relation.born-version")
    assert made.tensors == ("d",)
    assert made.text == (
        "d starts at version 1, not 0: `copy.deepcopy(x)` created it and deepcopy makes an empty tensor and then "
        "points it at a copy of the original memory with set_(), an in-place change that moves the version counter "
        "(no values are written then). Nothing is wrong with it."
    )


def test_opt_step_is_one_in_place_note_for_parameters_on_their_own_memory() -> None:
    script = MLP.rsplit("opt.zero_grad()\n", 1)[0]
    before, after = _plain(script)
    moved = {n: (before[n][0], t._version) for n, t in _named(after).items() if t._version != before[n][0]}
    assert set(moved.values()) == {(1, 2)}  # torch: every parameter moved from 1 to 2
    [made] = _of(_last(script), "change.in-place")
    assert made.tensors == tuple(moved)
    assert made.text == (
        "model.0.weight, model.0.bias, model.2.weight and model.2.bias were changed in place (version 1 → 2), "
        "each on its own memory."
    )


def test_other_versions_and_shared_memory_stay_separate_notes() -> None:
    # a and b start at version 0, c at 1; base and v share one storage and version counter.
    script = HEAD + (
        "a = torch.zeros(2)\n"
        "b = torch.zeros(3)\n"
        "c = torch.zeros(2)\n"
        "c.add_(1)\n"
        "base = torch.zeros(4)\n"
        "v = base[:2]\n"
        "out = (a.add_(1), b.add_(1), c.add_(1), base.add_(1))\n"
    )
    before, after = _plain(script)
    moved = {n: (before[n][0], t._version) for n, t in _named(after).items() if n in before}
    assert moved == {"a": (0, 1), "b": (0, 1), "c": (1, 2), "base": (0, 1), "v": (0, 1)}
    notes = _of(_last(script), "change.in-place")
    assert [(n.tensors, n.text) for n in notes] == [
        (("a", "b"), "a and b were changed in place (version 0 → 1), each on its own memory."),
        (("c",), "c was changed in place (version 1 → 2)."),
        (
            ("base", "v"),
            "base and v were changed in place (version 0 → 1) together: they share memory (S4) and one version "
            "counter.",
        ),
    ]


def test_a_single_in_place_write_keeps_its_sentence() -> None:
    [made] = _of(_last(HEAD + "a = torch.ones(2)\na.add_(1)\n"), "change.in-place")
    assert (made.tensors, made.text) == (("a",), "a was changed in place (version 0 → 1).")


def test_zero_grad_is_one_note_naming_every_reset_grad() -> None:
    before, after = _plain(MLP)
    reset = [n for n, t in _named(after).items() if before[n][1] is not None and t.grad is None]
    assert reset == ["model.0.weight", "model.0.bias", "model.2.weight", "model.2.bias"]  # torch: grads are None
    step = _last(MLP)
    assert [n.kind for n in step.explanations] == ["grad.reset"]
    made = step.explanations[0]
    assert made.tensors == tuple(reset)
    assert made.text == (
        "model.0.weight.grad, model.0.bias.grad, model.2.weight.grad and model.2.bias.grad were reset to None at "
        "once, as optimizer.zero_grad() and module.zero_grad() do by default: the next backward starts from "
        "nothing. zero_grad(set_to_none=False) zeroes them in place instead."
    )


def test_a_single_reset_grad_keeps_its_sentence() -> None:
    script = HEAD + (
        "w = torch.ones(2, requires_grad=True)\n"
        "opt = torch.optim.SGD([w], lr=0.1)\n"
        "(w * 2).sum().backward()\n"
        "opt.zero_grad()\n"
    )
    _before, after = _plain(script)
    assert after["w"].grad is None
    [made] = _last(script).explanations
    assert (made.kind, made.tensors) == ("grad.reset", ("w",))
    assert made.text == "w.grad was reset to None: the next backward starts from nothing."


def test_grads_zeroed_in_place_are_one_note() -> None:
    script = MLP.replace("opt.zero_grad()", "opt.zero_grad(set_to_none=False)")
    _before, after = _plain(script)
    zeroed = [n for n, t in _named(after).items() if t.grad is not None and not t.grad.any()]
    assert len(zeroed) == 4
    [made] = _last(script).explanations
    assert (made.kind, made.tensors) == ("grad.zeroed", tuple(zeroed))
    assert made.text == (
        "model.0.weight.grad, model.0.bias.grad, model.2.weight.grad and model.2.bias.grad were zeroed in place "
        "(same memory, values now 0)."
    )


def test_requires_grad_flipped_alike_is_one_note() -> None:
    script = HEAD + "model = nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 1))\nmodel.requires_grad_(False)\n"
    before, after = _plain(script)
    off = [n for n, t in _named(after).items() if before[n][2] and not t.requires_grad]
    assert len(off) == 4
    [made] = _of(_last(script), "change.requires-grad-off")
    assert made.tensors == tuple(off)
    assert made.text == (
        "model.0.weight, model.0.bias, model.1.weight and model.1.bias no longer require grad: autograd stops "
        "tracking operations on them."
    )
    again = script + "model.requires_grad_(True)\n"
    [made] = _of(_last(again), "change.requires-grad-on")
    assert made.tensors == tuple(off)
    assert made.text.startswith("model.0.weight, model.0.bias, model.1.weight and model.1.bias now require grad")
    one = HEAD + "lin = nn.Linear(2, 2, bias=False)\nlin.requires_grad_(False)\n"
    [made] = _of(_last(one), "change.requires-grad-off")
    assert made.text == "lin.weight no longer requires grad: autograd stops tracking operations on it."


def test_watch_shows_a_grouped_note_when_it_names_a_watched_tensor() -> None:
    """Under --watch a note about several tensors is shown when one of them is watched."""
    step = _last(MLP)
    [made] = step.explanations
    assert ViewOptions(watch=("model.2.bias",)).notes_of(step) == [made]
    assert ViewOptions(watch=("x",)).notes_of(step) == []
    out = run_cli(["run", "-e", MLP, "-f", "markdown", "--watch", "model.2.bias"]).stdout
    assert out.count("were reset to None at once") == 1 and out.count("were changed in place (version 1 → 2)") == 1
    hidden = run_cli(["run", "-e", MLP, "-f", "markdown", "--watch", "x"]).stdout
    assert "were reset to None" not in hidden and "start at version 1" not in hidden
