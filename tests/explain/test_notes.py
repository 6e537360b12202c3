"""Notes come from observed facts, name the right tensors and steps, and never
contradict what plain PyTorch does."""

from __future__ import annotations

import re

import pytest
import torch

from tcopy_cli.pipeline import run_source


def notes_of(src: str, step: int = -1) -> list[str]:
    return run_source(src, keep_going=True).steps[step].notes


def joined(src: str, step: int = -1) -> str:
    return " ".join(notes_of(src, step))


LEAF = "a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)\n"

# class -> (statement, phrase that must appear, phrases that must not)
RELATIONS = {
    "same object": ("b = a", "same tensor object as a", ["copy"]),
    "view in graph": ("b = a[1:]", "is a view of a", ["NOT notice"]),
    "detached alias": ("b = a.detach()", "cut from the graph", ["NOT notice"]),
    "untracked alias": ("b = a.data", "autograd will NOT notice", ["version counter but"]),
    "copy in graph": ("b = a.clone()", "copy of a in new memory", ["shares"]),
    "independent copy": ("b = a.clone().detach()", "independent copy", ["graph ("]),
}


@pytest.mark.parametrize("kind", list(RELATIONS))
def test_relation_classes(kind: str) -> None:
    stmt, must, must_not = RELATIONS[kind]
    text = joined(LEAF + stmt)
    assert must in text, text
    for phrase in must_not:
        assert phrase not in text, text


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("b = a.detach()", "b = torch.Tensor.detach(a)"),
        ("b = a.clone()", "b = torch.clone(a)"),
        ("b = a.data", "b = a.detach().data"),
        ("b = a.view(3)", "b = a.reshape(3)"),
        ("b = a.clone().detach()", "b = a.detach().clone()"),
        ("b = torch.empty_like(a).copy_(a)", "b = a.clone()"),
    ],
)
def test_equivalent_spellings_get_the_same_words(one: str, other: str) -> None:
    # Notes name the call as written (`a.view(3)`) and why a call made a view
    # ("a is contiguous ..."); beyond that, equivalent spellings get the same words.
    first = _without_call(joined(LEAF + one))
    second = _without_call(" ".join(notes_of(LEAF + other)))
    if one == "b = torch.empty_like(a).copy_(a)":
        # Same relation class (a copy in the graph); only the grad_fn name differs.
        assert "copy of a in new memory" in first and "copy of a in new memory" in second
        return
    assert first in second, (first, second)


def _without_call(text: str) -> str:
    text = re.sub(r"`[^`]*`(: | gave )?", "", text)
    return re.sub(r" \([^()]*contiguous[^()]*\)", "", text)


def test_view_offsets_and_disjoint_views() -> None:
    text = joined("x = torch.arange(4.0)\nhead = x[:2]\ntail = x[2:]")
    assert "tail is a view of x" in text and "offset 2" in text
    # head and tail share the storage but not bytes: a write to one can't change the other.
    r = run_source("x = torch.arange(4.0)\nhead = x[:2]\ntail = x[2:]\ntail[0] = 9.0")
    notes = " ".join(r.steps[-1].notes)
    assert "x and tail were changed in place" in notes
    assert "head shares that version counter" in notes and "own bytes were not written" in notes
    assert r.steps[-1].tensors["head"].values == [0.0, 1.0]


def test_requires_grad_after_detach_is_a_new_leaf() -> None:
    text = joined(LEAF + "b = a.detach()\nb.requires_grad_()")
    assert "`b.requires_grad_()` made b a leaf that requires grad" in text and "won't reach a" in text


def test_copy_into_plain_tensor_joins_graph() -> None:
    text = joined(LEAF + "t = torch.zeros(3)\nt.copy_(a)")
    assert "t joined the graph" in text and "CopyBackwards" in text and "flow to a" in text


def test_no_grad_results_have_no_history() -> None:
    text = joined(LEAF + "with torch.no_grad():\n    y = a * 2")
    assert "gradient tracking off" in text


def test_gradient_accumulation_notes() -> None:
    src = LEAF + "(a * 2).sum().backward()\n(a * 2).sum().backward()\na.grad.zero_()\na.grad = None"
    steps = run_source(src).steps
    assert "backward put a gradient into a.grad: [2., 2., 2.]" in " ".join(steps[1].notes)
    second = " ".join(steps[2].notes)
    assert "[2., 2., 2.] → [4., 4., 4.] (+[2., 2., 2.])" in second and "backward #2" in second
    assert "zeroed in place" in " ".join(steps[3].notes)
    assert " ".join(steps[4].notes).startswith("`a.grad = None` removed a's gradient")  # the record says it, once


def test_clone_path_accumulates_into_source() -> None:
    steps = run_source(LEAF + "b = a.clone()\n(a + b).sum().backward()").steps
    assert steps[-1].tensors["a"].grad.values == [2.0, 2.0, 2.0]  # two paths into a
    assert "backward put a gradient into a.grad" in " ".join(steps[-1].notes)


def test_rebinding_note() -> None:
    text = joined(LEAF + "y = a * 2\nz = y * 3\ny = y + 2")
    assert "graph" in text and "old y" in text
    text = joined(LEAF + "a = a - 0.1")
    assert "non-leaf" in text and "torch.no_grad()" in text


@pytest.mark.parametrize("name", ["b", "h_", "_"])
def test_rebinding_a_name_to_a_tensor_already_there_is_an_assignment(name: str) -> None:
    # `b = a` where b held another tensor: b now is a's tensor object, as python says; not a call
    # that returned its input, not an in-place method (a name ending in _), not new memory.
    src = f"a = torch.ones(2)\n{name} = torch.zeros(2)\n{name} = a"
    ns: dict[str, object] = {"torch": torch}
    exec(src, ns)
    assert ns[name] is ns["a"]
    text = joined(src)
    assert f"{name} is the same tensor object as a: assignment only adds a name" in text, text
    for wrong in ("returned", "works in place", "new tensor in new memory"):
        assert wrong not in text, text


@pytest.mark.parametrize("swap", ["a, b = b, a", "a, b = b, a + b"])
def test_a_swap_names_the_old_tensor(swap: str) -> None:
    src = f"a = torch.ones(2)\nb = torch.zeros(2)\n{swap}"
    ns: dict[str, object] = {"torch": torch}
    exec("a = torch.ones(2)\nb = torch.zeros(2)\nold_b = b\n" + swap, ns)
    assert ns["a"] is ns["old_b"] and ns["a"] is not ns["b"]  # a is the old b, not the b of now
    text = joined(src)
    assert "a is the same tensor object as the old b: assignment only adds a name, nothing is copied." in text
    assert "same tensor object as b:" not in text, text


def test_an_item_taken_from_a_list_is_the_item_itself() -> None:
    source = "import torch\nys = [torch.ones(2), torch.zeros(2)]\nx = ys[0]\n"
    ns: dict[str, object] = {}
    exec(source, ns)
    assert ns["x"] is ns["ys"][0]  # type: ignore[index]
    text = " ".join(run_source(source, origin="<t>").steps[-1].notes)
    assert "x is the same tensor object as ys[0]:" in text, text
    assert "returned" not in text and "copy of" not in text, text


def test_a_loop_target_bound_again_is_the_item_itself_not_a_copy() -> None:
    src = (
        "data = [(torch.randn(2), torch.zeros(2)) for _ in range(3)]\n"
        "for i, (x, _) in enumerate(data):\n"
        "    y = x * 2\n"
    )
    steps = run_source(src).steps
    for step in steps:
        text = " ".join(step.notes)
        assert "works in place" not in text and "returned" not in text, (step.index, text)
    second = next(s for s in steps if s.loops and s.loops[0].iteration == 2)
    ops = {op.function: op for op in second.ops if op.kind == "rebind"}
    for name, item in (("x", "data[1][0]"), ("_", "data[1][1]")):
        relations = {
            op_input.role: rel.relation
            for rel in ops[name].results[0].relations
            for op_input in [ops[name].inputs[rel.input]]
        }
        # The name's new tensor is the item itself; the tensor it held before is another one (equal
        # zeros for _), which makes it no copy of that.
        assert relations == {"value": "same-object", "old": "new"}, (name, relations)
        assert ops[name].inputs[0].name == item


SILENT = "silent gradient corruption"


def test_silent_corruption_fires_for_data_write_into_saved_tensor() -> None:
    steps = run_source(LEAF + "y = (a * a).sum()\na.data.mul_(10)\ny.backward()").steps
    assert SILENT in " ".join(steps[2].notes) and "MulBackward0" in " ".join(steps[2].notes)
    assert "a.grad was computed from corrupted inputs" in " ".join(steps[3].notes)
    assert "step 3" in " ".join(steps[3].notes)
    # and plain PyTorch indeed computes from the changed values, silently
    a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = (a * a).sum()
    a.data.mul_(10)
    y.backward()
    assert steps[3].tensors["a"].grad.values == a.grad.tolist() == [20.0, 40.0, 60.0]


@pytest.mark.parametrize(
    "write",
    [
        # from a hook while another graph's backward runs (the dispatch mode is off meanwhile)
        "d = a.data\nq = torch.ones(2, requires_grad=True)\ndef hook(g):\n    d.mul_(10)\n"
        "h = q.register_hook(hook)\nn = 1\nq.sum().backward()",
        # from another thread (the dispatch mode is the script thread's)
        "import threading\nd = a.data\nt = threading.Thread(target=d.mul_, args=(10,))\nn = 1\nt.start() or t.join()",
    ],
)
def test_silent_corruption_fires_for_writes_made_where_the_record_is_off(write: str) -> None:
    src = "import torch\n" + LEAF + "y = (a * a).sum()\n" + write
    steps = run_source(src).steps
    assert SILENT in " ".join(steps[-1].notes), [s.notes for s in steps]
    assert not any(SILENT in " ".join(s.notes) for s in steps[:-1])


@pytest.mark.parametrize(
    "write",
    [
        "d = a.data\nn = 1\nd.mul_(10)",  # through a .data alias kept from an earlier step
        "v = a.detach().numpy()\nn = 1\nv *= 10",  # through a NumPy view: no torch call at all
        "import ctypes\np = a.data_ptr()\nn = 1\nctypes.memset(p, 0, 4)",  # through raw memory
    ],
)
def test_silent_corruption_fires_for_writes_torch_does_not_record(write: str) -> None:
    """The write happens steps after the graph saved ``a``, in a step with no torch call."""
    src = LEAF + "y = (a * a).sum()\n" + write
    steps = run_source(src).steps
    assert SILENT in " ".join(steps[-1].notes), [s.notes for s in steps]
    assert not any(SILENT in " ".join(s.notes) for s in steps[:-1])


@pytest.mark.parametrize(
    "src",
    [
        LEAF + "y = (a * 2).sum()\nu = torch.ones(3)\nu.data.mul_(10)",  # write into an unsaved tensor
        LEAF + "y = (a * a).sum()\nd = a.detach()\nd.mul_(10)",  # detach: torch itself catches it
        LEAF + "y = (a * a).sum()\nz = a + 1",  # nothing changed
        LEAF + "y = (a * 2).sum()\na.data.mul_(10)",  # a not saved (mul by a constant saves nothing of a)
    ],
)
def test_silent_corruption_does_not_fire_otherwise(src: str) -> None:
    for step in run_source(src).steps:
        assert SILENT not in " ".join(step.notes), (step.source, step.notes)


def test_detach_write_is_flagged_as_version_bump() -> None:
    text = joined(LEAF + "y = (a * a).sum()\nd = a.detach()\nd.mul_(10)")
    assert "will fail with a version error" in text


def test_warning_notes() -> None:
    assert "detach().clone()" in joined(LEAF + "b = torch.tensor(a)")
    text = joined(LEAF + "b = a * 2\ng = b.grad")
    assert "retain_grad()" in text


def test_zeroing_a_grad_too_large_to_list_is_not_called_a_backward() -> None:
    # 10,000 values: the table summarises them, so the record of w.grad.zero_() tells what happened.
    source = "w = torch.ones(100, 100, requires_grad=True)\n(w * 2).sum().backward()\nw.grad.zero_()"
    text = " ".join(notes_of("import torch\n" + source))
    ns: dict[str, object] = {}
    exec("import torch\n" + source, ns)
    w = ns["w"]
    assert isinstance(w, torch.Tensor) and w.grad is not None and not w.grad.any()
    assert "w.grad was zeroed in place" in text and "backward added into" not in text


def test_a_backward_counts_once_for_a_tensor_under_two_names() -> None:
    # Inside f, x and f:x are one tensor: its .grad was zeroed, and one backward added to it.
    source = (
        "import torch\nx = torch.tensor(2.0, requires_grad=True)\n(x * x).backward()\nx.grad.zero_()\n"
        "def f(x):\n    (x * 4).backward()\n    return x\ny = f(x)\n"
    )
    texts = [n for s in run_source(source, origin="<t>").steps for n in s.notes if "backward added into" in n]
    assert texts and all("backward #1 " in t for t in texts), texts


# Statements that change w.grad, and whether each runs a backward pass (by construction).
GRAD_WRITES = [
    ("w = torch.ones(3, requires_grad=True)", False),
    ("(w * 2).sum().backward()", True),
    ("w.grad.add_(1)", False),
    ("w.grad += 5", False),
    ("g = w.grad", False),
    ("g.mul_(2)", False),
    ("torch.autograd.backward((w * 3).sum())", True),
    ("w.grad.data.add_(1)", False),
]


def test_a_grad_the_script_wrote_is_not_called_a_backward() -> None:
    # Only a step whose record holds a backward call gets a backward note; every other change
    # of w.grad is told as a change, with the values plain python computes.
    source = "import torch\n" + "\n".join(s for s, _ in GRAD_WRITES) + "\n"
    steps = run_source(source, origin="<t>").steps[1:]
    assert [s.source for s in steps] == [s for s, _ in GRAD_WRITES]
    ns: dict[str, object] = {"torch": torch}
    previous = None
    for step, (statement, backward) in zip(steps, GRAD_WRITES):
        exec(statement, ns)
        w = ns["w"]
        assert isinstance(w, torch.Tensor)
        now = None if w.grad is None else w.grad.tolist()
        kinds = [n.kind for n in step.explanations if "w" in n.tensors and n.kind.startswith("grad.")]
        text = " ".join(step.notes)
        if now == previous:
            assert kinds == [], (statement, text)
        elif backward:
            assert kinds == ["grad.received" if previous is None else "grad.accumulated"], (statement, text)
        else:
            assert kinds == ["grad.written"] and "backward added" not in text, (statement, text)
            assert "no backward ran" in text or "wrote into it in place" in text, text
        assert step.tensors["w"].grad is None or step.tensors["w"].grad.values == now
        previous = now
    counts = [n.text for s in steps for n in s.explanations if n.kind == "grad.accumulated"]
    assert len(counts) == 1 and "backward #2 " in counts[0], counts


CLOSURE_SCRIPT = """\
import torch
w = torch.tensor([1.0, 2.0], requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1)
(w * w).sum().backward()
def closure():
    opt.zero_grad()
    loss = (w * 3).sum()
    loss.backward()
    return loss
opt.step(closure)
if (w * 5).sum().backward() is None:
    n = 1
torch.relu(w - 10).sum().backward()
(w * 2).sum().backward()
"""


def test_grad_notes_follow_the_record_and_the_version_counter() -> None:
    # zero_grad() inside a closure is a reset, not an accumulation; a backward in an if header
    # is told in the step after it; a pass that adds zeros still counts (its version moved).
    steps = run_source(CLOSURE_SCRIPT, origin="<t>").steps
    ns: dict[str, object] = {}
    exec(CLOSURE_SCRIPT, ns)
    w = ns["w"]
    assert isinstance(w, torch.Tensor) and w.grad is not None
    by_source = {s.source: s for s in steps}

    def grad_notes(source: str) -> list[str]:
        return [n.text for n in by_source[source].explanations if n.kind.startswith("grad.")]

    closure = grad_notes("opt.step(closure)")
    assert len(closure) == 1 and closure[0].endswith(  # `opt.zero_grad()` as recorded (--trust: `zero_grad()`)
        "zero_grad()` in this step dropped w.grad ([2., 4.]), then backward put a new gradient into it: [3., 3.]."
    ), closure
    header = grad_notes("n = 1")
    assert header and header[0].startswith("backward added into w.grad: [3., 3.] → [8., 8.]"), header
    assert "backward #2 " in header[0]
    zeros = grad_notes("torch.relu(w - 10).sum().backward()")
    assert zeros and "(+[0., 0.])" in zeros[0] and "backward #3 " in zeros[0], zeros
    last = [n.text for n in steps[-1].explanations if n.kind.startswith("grad.")]
    assert "backward #4 " in last[0] and last[0].startswith("backward added into w.grad: [8., 8.] → [10., 10.]"), last
    assert steps[-1].tensors["w"].grad is not None and steps[-1].tensors["w"].grad.values == w.grad.tolist()


def test_a_large_grad_zeroed_through_data_under_another_name_is_zeroed() -> None:
    # 200 values (not listed): the record of p.grad.data.zero_() tells what happened to lin.weight.grad.
    source = (
        "import torch\nlin = torch.nn.Linear(20, 10)\nx = torch.ones(3, 20)\nlin(x).sum().backward()\n"
        "for p in lin.parameters():\n    p.grad.data.zero_()\nlin(x).sum().backward()\n"
    )
    steps = run_source(source, origin="<t>").steps
    zeroed = {t for s in steps for n in s.explanations if n.kind == "grad.zeroed" for t in n.tensors}
    assert {"lin.weight", "lin.bias"} <= zeroed, [s.notes for s in steps]
    last = [n.text for n in steps[-1].explanations if n.kind == "grad.accumulated"]
    assert len(last) == 3 and all("backward #1 " in t for t in last), last  # lin.weight, lin.bias, p


RESETS_SCRIPT = """\
import torch
w = torch.tensor([1.0, 2.0], requires_grad=True)
v = torch.tensor([3.0, 4.0], requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1)
(w * v).sum().backward()
def closure():
    opt.zero_grad()
    a = (w * v).sum()
    a.backward(retain_graph=True)
    a.backward()
    return a
opt.step(closure)
w.grad.zero_()
(w * 3).sum().backward()
(w * -3).sum().backward()
def drop():
    w.grad = None
    b = (w * 5).sum()
    b.backward()
    return b
opt.step(drop)
c = (w * 2).sum()
c.backward(), opt.zero_grad(set_to_none=False)
"""
# By construction: the statement, the note kind about w, the one about v, a phrase of w's note.
RESETS_EXPECTED = {
    "opt.step(closure)": ("grad.received", "grad.accumulated", "in this step dropped w.grad"),
    "(w * 3).sum().backward()": ("grad.accumulated", None, "backward added into w.grad"),
    "(w * -3).sum().backward()": ("grad.accumulated", None, "backward added into w.grad"),
    "opt.step(drop)": ("grad.received", None, "`w.grad = None` in this step dropped w.grad"),
    "c.backward(), opt.zero_grad(set_to_none=False)": ("grad.zeroed", None, "zeroed"),
}


def test_resets_and_passes_are_told_as_measured() -> None:
    # zero_grad() that does not cover v, two passes into v, a backward summing to zero, a grad
    # dropped by assignment inside a closure, and zero_grad after backward in one statement.
    steps = run_source(RESETS_SCRIPT, origin="<t>").steps
    ns: dict[str, object] = {}
    exec(RESETS_SCRIPT, ns)
    by_source = {s.source: s for s in steps}
    expected = dict(RESETS_EXPECTED)
    for source, (w_kind, v_kind, phrase) in expected.items():
        notes = by_source[source].explanations
        about_w = [n for n in notes if n.kind.startswith("grad.") and "w" in n.tensors]
        about_v = [n for n in notes if n.kind.startswith("grad.") and "v" in n.tensors]
        assert [n.kind for n in about_w] == [w_kind] and phrase in about_w[0].text, (source, about_w)
        assert [n.kind for n in about_v] == ([v_kind] if v_kind else []), (source, about_v)
    v_note = next(n.text for n in by_source["opt.step(closure)"].explanations if "v" in n.tensors)
    assert v_note.startswith("2 backward passes added into v.grad: [1., 2.] → [3., 6.] (+[2., 4.])"), v_note
    assert "backward #3 " in v_note
    zero_sum = next(n.text for n in by_source["(w * -3).sum().backward()"].explanations if "w" in n.tensors)
    assert "[3., 3.] → [0., 0.] (+[-3., -3.])" in zero_sum and "backward #2 " in zero_sum, zero_sum
    w, v = ns["w"], ns["v"]
    assert isinstance(w, torch.Tensor) and isinstance(v, torch.Tensor) and w.grad is not None and v.grad is not None
    assert steps[-1].tensors["w"].grad is not None and steps[-1].tensors["w"].grad.values == w.grad.tolist() == [0, 0]
    assert steps[-1].tensors["v"].grad is not None and steps[-1].tensors["v"].grad.values == v.grad.tolist()


def _grads_by_python(src: str, names: list[str]) -> dict[str, list]:
    """The grads plain python computes for ``src``."""
    ns: dict = {"torch": torch}
    exec(src, ns)
    return {n: ns[n].grad.tolist() for n in names}


def test_grads_received_in_one_backward_are_one_note() -> None:
    src = (
        "w = torch.tensor([1., 2.], requires_grad=True)\n"
        "b = torch.tensor([0.5], requires_grad=True)\n"
        "(w * 3 + b).sum().backward()"
    )
    got = notes_of(src)
    grads = _grads_by_python(src, ["w", "b"])
    assert grads == {"w": [3.0, 3.0], "b": [2.0]}
    assert got == ["backward put gradients into w.grad ([3., 3.]) and b.grad ([2.])."]


def test_long_grads_received_together_are_named_not_listed() -> None:
    src = "torch.manual_seed(0)\nlin = torch.nn.Linear(4, 8)\nlin(torch.randn(3, 4)).sum().backward()"
    steps = run_source(src).steps
    received = [n for n in steps[-1].notes if n.startswith("backward put")]
    assert received == ["backward put gradients into lin.weight.grad and lin.bias.grad."]
    # the values left out of the note are in the records
    assert steps[-1].tensors["lin.bias"].grad.values == pytest.approx([3.0] * 8)


def test_grad_received_under_two_names_is_told_once() -> None:
    src = (
        "w = torch.tensor([1., 2.], requires_grad=True)\n"
        "a = w\n"
        "b = torch.ones(2, requires_grad=True)\n"
        "(w * w * b).sum().backward()"
    )
    grads = _grads_by_python(src, ["w", "b"])
    assert grads == {"w": [2.0, 4.0], "b": [1.0, 4.0]}
    assert notes_of(src) == [
        "backward put gradients into w.grad ([2., 4.]) and b.grad ([1., 4.]). a is w under another name."
    ]
    one = notes_of("w = torch.tensor([1., 2.], requires_grad=True)\na = w\n(w * w).sum().backward()")
    assert one == ["backward put a gradient into w.grad: [2., 4.]. a is w under another name."]
