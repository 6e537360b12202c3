"""Provenance differential suite: every relation the operation record claims holds in plain PyTorch.

Each script below is run twice: by tcopy (its operation record, ``Step.ops``), and by
plain Python, one top-level statement at a time with ``exec``, keeping the namespace
before and after each statement. For every record entry whose result and inputs have
script names, the claimed relation is checked on the plain objects: ``is`` for the same
object; storage pointers and version-counter sharing (``graph.version_groups``, the
check the observer uses) for views and aliases; NumPy memory overlap for the bridges;
equal values for copies; a full (unbounded) walk of the autograd graph for ``graph``;
version counters for ``bumped``. A second test checks that no relation note names, as
the source of a tensor, a tensor that the record does not list among the step's inputs.
"""

from __future__ import annotations

import ast
import copy
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

from tcopy_cli.explain.ops import step_input_names
from tcopy_cli.pipeline import run_source
from tcopy_cli.trace.graph import node_key, version_groups
from tcopy_cli.trace.records import OpInput, OpRecord, Step
from tcopy_cli.trace.relate import COPYING_NODES

HEAD = "import torch\nimport numpy as np\nimport copy\n"

SCRIPTS: dict[str, str] = {
    # equal values computed, not copied: relu(w * 1) equals w but is no copy of it
    "computed_equal_values": "w = torch.ones(3, requires_grad=True)\nx = torch.ones(3)\nh = torch.relu(w * x)",
    # calls that may return their own input
    "to_same_dtype": "w = torch.ones(3)\ny = w.to(torch.float32)",
    "to_other_dtype": "w = torch.ones(3)\ny = w.to(torch.float64)",
    "float_on_float": "w = torch.ones(3)\ny = w.float()",
    "double_on_float": "w = torch.ones(3)\ny = w.double()",
    "half_on_half": "w = torch.ones(3, dtype=torch.float16)\ny = w.half()",
    "type_same": "w = torch.ones(3)\ny = w.type(torch.float32)",
    "contiguous_already": "w = torch.ones(2, 3)\ny = w.contiguous()",
    "contiguous_copy": "w = torch.ones(2, 3).t()\ny = w.contiguous()",
    "as_tensor_tensor": "w = torch.ones(3)\ny = torch.as_tensor(w)",
    "as_tensor_dtype": "w = torch.ones(3)\ny = torch.as_tensor(w, dtype=torch.float64)",
    "requires_grad_returns_self": "w = torch.ones(3)\ny = w.requires_grad_()",
    "detach_in_place": "x = torch.ones(3, requires_grad=True)\nw = x * 2\ny = w.detach_()",
    "cpu_on_cpu": "w = torch.ones(3)\ny = w.cpu()",
    "long_on_float": "w = torch.ones(3)\ny = w.long()",
    # view or copy
    "reshape_view": "u = torch.arange(6.0)\nz = u.reshape(2, 3)",
    "reshape_copy": "u = torch.arange(6.0).reshape(2, 3).t()\nz = u.reshape(-1)",
    "flatten_view": "u = torch.arange(6.0).reshape(2, 3)\nz = u.flatten()",
    "flatten_copy": "u = torch.arange(6.0).reshape(2, 3).t()\nz = u.flatten()",
    "view_ok": "u = torch.arange(6.0)\nz = u.view(3, 2)",
    "view_fails": "u = torch.arange(6.0).reshape(2, 3).t()\nz = u.view(-1)",
    "transpose": "u = torch.arange(6.0).reshape(2, 3)\nz = u.t()",
    "permute": "u = torch.zeros(2, 3, 4)\nz = u.permute(2, 0, 1)",
    "unsqueeze": "u = torch.arange(3.0)\nz = u.unsqueeze(0)",
    "expand": "u = torch.arange(3.0)\nz = u.expand(2, 3)",
    "chain_t_contiguous": "u = torch.arange(6.0).reshape(2, 3)\nz = u.t().contiguous()",
    "reshape_as": "u = torch.arange(6.0)\nv = torch.zeros(2, 3)\nz = u.reshape_as(v)",
    # indexing
    "basic_slice": "src = torch.arange(5.0)\np = src[1:3]",
    "basic_int": "src = torch.arange(6.0).reshape(2, 3)\np = src[1]",
    "basic_step": "src = torch.arange(6.0)\np = src[::2]",
    "advanced_list": "src = torch.arange(5.0)\np = src[[0, 2]]",
    "advanced_tensor": "src = torch.arange(5.0)\nidx = torch.tensor([1, 3])\np = src[idx]",
    "boolean_mask": "src = torch.arange(5.0)\np = src[src > 1]",
    "boolean_named_mask": "src = torch.arange(5.0)\nmask = src > 2\np = src[mask]",
    "index_graph": "x = torch.ones(4, requires_grad=True)\ny = x * 2\np = y[[0, 1]]",
    "slice_graph": "x = torch.ones(4, requires_grad=True)\ny = x * 2\np = y[1:]",
    "ellipsis": "src = torch.zeros(2, 3)\np = src[..., 0]",
    # NumPy bridges
    "from_numpy": "arr = np.ones(3, dtype=np.float32)\nj = torch.from_numpy(arr)",
    "as_tensor_numpy": "arr = np.ones(3, dtype=np.float32)\nj = torch.as_tensor(arr)",
    "tensor_numpy": "arr = np.ones(3, dtype=np.float32)\nk = torch.tensor(arr)",
    "tensor_after_from_numpy": "arr = np.ones(3)\nj = torch.from_numpy(arr)\nk = torch.tensor(arr)",
    "numpy_of_tensor": "t = torch.ones(3)\nn = t.numpy()",
    "numpy_of_detached": "x = torch.ones(3, requires_grad=True)\nn = x.detach().numpy()",
    "as_tensor_numpy_dtype": "arr = np.ones(3, dtype=np.float32)\nj = torch.as_tensor(arr, dtype=torch.float64)",
    # .data, detach, clone
    "data_alias": "x = torch.ones(3, requires_grad=True)\nd = x.data",
    "detach_view": "x = torch.ones(3, requires_grad=True)\nd = x.detach()",
    "clone_graph": "x = torch.ones(3, requires_grad=True)\nc = x.clone()",
    "clone_detach": "x = torch.ones(3, requires_grad=True)\nc = x.clone().detach()",
    "detach_clone": "x = torch.ones(3, requires_grad=True)\nc = x.detach().clone()",
    "data_swap": "q = torch.ones(3, requires_grad=True)\nq.data = torch.zeros(5)",
    "data_swap_kept": "q = torch.ones(3)\nold = q.data\nq.data = torch.zeros(2)",
    "grad_reset": "x = torch.ones(3, requires_grad=True)\nx.sum().backward()\nx.grad = None",
    "requires_grad_attr": "x = torch.ones(3)\nx.requires_grad = True",
    "empty_like_copy": "a = torch.ones(3, requires_grad=True)\nb = torch.empty_like(a).copy_(a)",
    # rebinding vs in-place
    "rebind_held": "a = torch.ones(2)\nb = a\na = a + 1",
    "augassign_in_place": "a = torch.ones(2)\nb = a\na += 1",
    "add_in_place": "a = torch.ones(2)\nb = a\na.add_(1)",
    "rebind_graph": "x = torch.ones(2, requires_grad=True)\ny = x * 2\ny = y + 1",
    "same_object_bind": "a = torch.ones(2)\nb = a",
    "setitem": "a = torch.zeros(3)\nv = a[1:]\na[0] = 5.0",
    "setitem_view": "a = torch.zeros(3)\nv = a[1:]\nv[0] = 5.0",
    "mul_scalar": "a = torch.ones(3)\nb = a * 2",
    "neg": "x = torch.ones(3, requires_grad=True)\nb = -x",
    "compare": "a = torch.arange(3.0)\nm = a > 1",
    # writes into views of graph tensors
    "copy_slices": "x = torch.ones(3, requires_grad=True)\ny = x * 2\nv = y[:2]\nv.mul_(3)",
    "copy_slices_setitem": "x = torch.ones(3, requires_grad=True)\ny = x * 2\ny[0] = 0.0",
    "copy_slices_augassign": "x = torch.ones(3, requires_grad=True)\ny = x * 2\nv = y[1:]\nv += 1",
    # born at version 1
    "deepcopy_leaf": "x = torch.ones(3, requires_grad=True)\nd = copy.deepcopy(x)",
    "deepcopy_plain": "x = torch.arange(3.0)\nd = copy.deepcopy(x)",
    "linear_params": "lin = torch.nn.Linear(2, 2)",
    "linear_forward": "torch.manual_seed(0)\nlin = torch.nn.Linear(2, 2)\nx = torch.ones(1, 2)\nout = lin(x)",
    # more calls
    "cat": "a = torch.ones(2)\nb = torch.zeros(2)\nc = torch.cat([a, b])",
    "stack_graph": "a = torch.ones(2, requires_grad=True)\nb = torch.zeros(2)\nc = torch.stack([a, b])",
    "unbind": "a = torch.arange(4.0).reshape(2, 2)\nr = a.unbind(0)",
    "chunk": "a = torch.arange(4.0)\nparts = a.chunk(2)",
    "sum_graph": "x = torch.ones(3, requires_grad=True)\ns = x.sum()",
    "matmul": "a = torch.ones(2, 2, requires_grad=True)\nb = torch.ones(2, 2)\nc = a @ b",
    "no_grad_result": (
        "x = torch.ones(3, requires_grad=True)\nwith_grad = x * 1\ntorch.set_grad_enabled(False)\n"
        "c = x * 2\ntorch.set_grad_enabled(True)"
    ),
    "new_tensor": "a = torch.ones(2)\nb = a.new_tensor([1.0, 2.0])",
    "zeros_like": "a = torch.ones(2, requires_grad=True)\nb = torch.zeros_like(a)",
    "clamp_in_place": "a = torch.arange(3.0)\nb = a.clamp_(0, 1)",
    "relu_functional": "a = torch.arange(-2.0, 2.0)\nb = torch.relu(a)",
    "view_as_real_like": "a = torch.ones(2, 3)\nb = a.view_as(torch.zeros(3, 2))",
    "narrow": "a = torch.arange(6.0)\nb = a.narrow(0, 1, 3)",
    "squeeze": "a = torch.zeros(1, 3)\nb = a.squeeze()",
    "mT": "a = torch.zeros(2, 3)\nb = a.mT",
    "select": "a = torch.zeros(2, 3)\nb = a.select(1, 0)",
    "diagonal": "a = torch.eye(3)\nb = a.diagonal()",
    # module calls: the module's parameters are inputs of the call
    "module_call": "torch.manual_seed(0)\nfc1 = torch.nn.Linear(3, 2)\nx = torch.randn(4, 3)\nout = fc1(x)",
    "module_call_in_relu": (
        "torch.manual_seed(0)\nfc1 = torch.nn.Linear(3, 2)\nx = torch.randn(4, 3)\nh = torch.relu(fc1(x))"
    ),
    "module_call_grad_input": (
        "torch.manual_seed(0)\nfc1 = torch.nn.Linear(3, 2)\nx = torch.randn(4, 3, requires_grad=True)\ny = fc1(x)"
    ),
    "sequential_call": (
        "torch.manual_seed(0)\nmodel = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), "
        "torch.nn.Linear(4, 1))\nx = torch.randn(2, 3)\nout = model(x)"
    ),
    "module_call_no_grad": (
        "torch.manual_seed(0)\nfc1 = torch.nn.Linear(3, 2)\nx = torch.randn(4, 3)\ntorch.set_grad_enabled(False)\n"
        "out = fc1(x)\ntorch.set_grad_enabled(True)"
    ),
    "frozen_module_call": (
        "torch.manual_seed(0)\nfc1 = torch.nn.Linear(3, 2)\nfc1.requires_grad_(False)\nx = torch.randn(4, 3)\n"
        "out = fc1(x)"
    ),
    # tensors held in lists and tuples
    "list_stack": "a = torch.ones(3)\nb = torch.zeros(3)\nts = [a, b]\ns = torch.stack(ts)",
    "list_only_cat": "ts = [torch.ones(2), torch.zeros(2)]\nc = torch.cat(ts)",
    "list_item_view": "ts = [torch.arange(6.0), torch.zeros(2)]\nv = ts[0].view(2, 3)",
    "tuple_item_mul": "pair = (torch.ones(2, requires_grad=True), torch.zeros(2))\nd = pair[0] * 2",
    "list_graph_cat": "ts = [torch.ones(2, requires_grad=True), torch.zeros(2)]\nc = torch.cat(ts)",
    "comprehension_stack": "ts = [torch.ones(2), torch.zeros(2)]\nk = torch.stack([t * 2 for t in ts])",
    # equal values computed without a graph: never a copy
    "zeros_times_two": "b = torch.zeros(3)\nc = b * 2",
    "relu_positive": "a = torch.arange(1.0, 4.0)\nb = torch.relu(a)",
    "abs_nonnegative_chain": "a = torch.arange(3.0)\nb = a.clone().abs()",
    "clone_then_view": "a = torch.arange(6.0)\nb = a.clone().view(6)",
    # requires_grad flips
    "requires_grad_call": "x = torch.ones(3)\nx.requires_grad_()",
    "requires_grad_off": "x = torch.ones(3, requires_grad=True)\nx.requires_grad_(False)",
    "requires_grad_attr_off": "x = torch.ones(3, requires_grad=True)\nx.requires_grad = False",
    "requires_grad_nonleaf_noop": "x = torch.ones(3, requires_grad=True)\nv = x * 3\nv.requires_grad_()",
    "requires_grad_detached": "x = torch.ones(3, requires_grad=True)\na = x.detach()\na.requires_grad_(True)",
    "requires_grad_nonleaf_error": "x = torch.ones(3, requires_grad=True)\nw = x * 2\nw.requires_grad = False",
}


def _reference(source: str, check: Callable[[int, dict[str, Any], dict[str, Any]], None]) -> int:
    """Run ``source`` with plain Python one top-level statement at a time; after statement i,
    ``check(i, namespace before, namespace after)`` while the objects are as that statement left them."""
    ns: dict[str, Any] = {}
    tree = ast.parse(source)
    for i, stmt in enumerate(tree.body):
        before = dict(ns)
        code = compile(ast.Module(body=[stmt], type_ignores=[]), "<ref>", "exec")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                exec(code, ns)
            except Exception:
                check(i, before, dict(ns))
                return i + 1
        check(i, before, dict(ns))
    return len(tree.body)


def _full_reach(result: torch.Tensor, source: torch.Tensor) -> bool:
    """Backward from ``result`` reaches ``source``: an unbounded walk of the graph."""
    fn = result.grad_fn
    if fn is None or not source.requires_grad:
        return False
    target = node_key(source.grad_fn) if source.grad_fn is not None else id(source)
    seen: set[int] = set()
    stack = [fn]
    while stack:
        node = stack.pop()
        key = node_key(node)
        if key in seen:
            continue
        seen.add(key)
        if key == target:
            return True
        stack.extend(n for n, _ in node.next_functions if n is not None)
    return False


def _storage(t: torch.Tensor) -> tuple[int, int]:
    st = t.untyped_storage()
    return int(st.data_ptr()), int(st.nbytes())


def _shares_counter(a: torch.Tensor, b: torch.Tensor) -> bool:
    return "b" in version_groups([[("a", a), ("b", b)]]).get("a", [])


def _overlap(t: torch.Tensor, a: np.ndarray) -> bool:
    return bool(np.shares_memory(t.detach().numpy(), a))


def _equal(result: Any, source: Any) -> bool:
    r = torch.as_tensor(result).detach()
    s = torch.as_tensor(source).detach()
    return r.shape == s.shape and torch.equal(r, s.to(r.dtype))


def _check(relation: str, graph: bool, result: Any, source: Any, where: str) -> None:
    if relation == "same-object":
        assert result is source, where
        return
    assert result is not source, where
    if isinstance(result, torch.Tensor) and isinstance(source, torch.Tensor):
        same = _storage(result) == _storage(source)
        if relation == "view":
            assert same and _shares_counter(result, source), where
        elif relation == "alias":
            assert same and not _shares_counter(result, source), where
        else:
            assert not same, where
            if relation == "copy":
                assert _equal(result, source), where
                # a copy autograd recorded was made by a node that moves values unchanged
                assert result.grad_fn is None or type(result.grad_fn).__name__ in COPYING_NODES, where
        assert graph == _full_reach(result, source), where
        return
    tensor, array = (result, source) if isinstance(result, torch.Tensor) else (source, result)
    if relation == "shares-memory":
        assert _overlap(tensor, array), where
    else:
        assert not _overlap(tensor, array), where
        if relation == "copy":
            assert _equal(result, source), where


def _lookup(name: str | None, ns: dict[str, Any]) -> Any:
    """The object a table name such as ``a``, ``lin.weight``, ``model.0.bias`` or ``ts[1]``
    names in a plain namespace (None for a function's locals, ``f:x``)."""
    if name is None or ":" in name:
        return None
    head, *parts = name.replace("[", ".[").split(".")
    obj = ns.get(head)
    for part in parts:
        if part.startswith("["):  # ts[0]: an item of a list or tuple
            index = part.strip("[]")
            if not (isinstance(obj, (list, tuple)) and index.isdigit()):
                return None
            obj = obj[int(index)]
        elif isinstance(obj, torch.nn.Module):  # lin.weight, model.0.bias
            params = dict(obj.named_parameters(recurse=False))
            obj = params[part] if part in params else obj._modules.get(part)
        else:
            return None
    return obj


def _input_object(step_ops: list[OpRecord], inp: OpInput, before: dict[str, Any]) -> Any:
    return _lookup(inp.name, before)


def _result_object(name: str | None, item: str, after: dict[str, Any]) -> Any:
    return _lookup(name, after)


def _steps(name: str) -> list[Step]:
    return run_source(HEAD + SCRIPTS[name], keep_going=False).steps


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_every_recorded_relation_holds_in_plain_pytorch(name: str) -> None:
    steps = _steps(name)
    checked = [0]
    versions: dict[int, int] = {}

    def check(i: int, before: dict[str, Any], after: dict[str, Any]) -> None:
        step = steps[i]
        # A result written in place by a later operation of the statement changed after it was measured.
        rewritten = {i.from_op for o in step.ops for k, i in enumerate(o.inputs) if k in o.bumped}
        first_bump = min((o.index for o in step.ops if o.bumped), default=len(step.ops))
        for op in step.ops:
            if op.error is not None:
                continue
            for j, inp in enumerate(op.inputs):
                if op.index > first_bump:
                    break
                obj = _input_object(step.ops, inp, before)
                if not isinstance(obj, torch.Tensor):
                    continue
                if j not in op.bumped and id(obj) in versions and op.kind != "rebind":
                    assert inp.version == versions[id(obj)], (name, op.call, inp.name)
                if after.get(inp.name) is obj and id(obj) in versions:
                    moved = obj._version != versions[id(obj)]
                    if not moved:
                        assert j not in op.bumped, (name, op.call, inp.name)
            for res in op.results:
                result = _result_object(res.name, res.item, after)
                if result is None or op.kind == "rebind" or op.index in rewritten:
                    continue
                for rel in res.relations:
                    inp = op.inputs[rel.input] if rel.op is None else step.ops[rel.op].inputs[rel.input]
                    source = _input_object(step.ops, inp, before)
                    if not isinstance(source, (torch.Tensor, np.ndarray)):
                        continue
                    where = f"{name}: {op.call} -> {res.name} {rel.relation} {inp.name} graph={rel.graph}"
                    _check(rel.relation, rel.graph, result, source, where)
                    checked[0] += 1
        versions.clear()
        versions.update({id(v): v._version for v in after.values() if isinstance(v, torch.Tensor)})

    ran = _reference(HEAD + SCRIPTS[name], check)
    assert ran == len(steps)
    if name not in ("linear_params", "grad_reset", "view_fails", "data_swap") and not name.startswith("requires_grad"):
        assert checked[0] > 0, name


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_notes_name_as_sources_only_the_steps_recorded_inputs(name: str) -> None:
    for step in _steps(name):
        allowed = step_input_names(step.ops)
        for n in step.explanations:
            # Identity ("the same tensor object as") is a measurement, not a claim of provenance.
            if not n.kind.startswith("relation.") or n.kind in ("relation.born-version", "relation.same-object"):
                continue
            _subject, *named_sources = n.tensors
            assert set(named_sources) <= allowed, (name, step.source, n.text, allowed)
            if step.ops:
                assert n.op is not None or not named_sources, (name, n.text)


FAMILIES = {
    "to_same_dtype": ("relation.returned-input", "`w.to(torch.float32)` returned w itself"),
    "contiguous_already": ("relation.returned-input", "already contiguous"),
    "as_tensor_tensor": ("relation.returned-input", "as_tensor copies only when it must"),
    "reshape_copy": ("relation.copy-reason", "`u.reshape(-1)` had to copy: u is not contiguous"),
    "reshape_view": ("relation.view", "u is contiguous, so a view could express"),
    "contiguous_copy": ("relation.independent-copy", "copied because w was not contiguous"),
    "advanced_list": ("relation.copy-reason", "advanced indexing"),
    "boolean_mask": ("relation.copy-reason", "boolean mask, which always copies"),
    "basic_slice": ("relation.view", "basic indexing"),
    "from_numpy": ("relation.numpy-shared", "without copying"),
    "tensor_after_from_numpy": ("relation.numpy-copy", "`torch.tensor(arr)` copies the array's data"),
    "numpy_of_tensor": ("relation.numpy-array", "`t.numpy()` made the NumPy array n"),
    "data_swap": ("change.data-swap", "swapped the memory under q"),
    "rebind_held": ("rebind.still-held", "b still holds the old tensor"),
    "augassign_in_place": ("change.in-place-augassign", "so b sees the change too"),
    "copy_slices": ("change.copy-slices", "y.grad_fn is now CopySlices"),
    "copy_slices_setitem": ("change.copy-slices", "y.grad_fn is now CopySlices"),
    "deepcopy_leaf": ("relation.born-version", "d starts at version 1"),
    "linear_params": ("relation.born-version", "lin.weight and lin.bias start at version 1"),
    "data_alias": ("relation.untracked-alias", "autograd will NOT notice"),
    "detach_view": ("relation.detached", "cut from the graph"),
    "grad_reset": ("change.grad-replaced", "removed x's gradient"),
    "module_call": (
        "relation.computed",
        "`fc1(x)`: out is a new tensor in the graph (AddmmBackward0), computed from fc1.weight and fc1.bias",
    ),
    "module_call_in_relu": ("relation.computed", "computed from fc1.weight and fc1.bias"),
    "module_call_grad_input": ("relation.computed", "computed from x, fc1.weight and fc1.bias"),
    "sequential_call": ("relation.computed", "model.0.weight, model.0.bias, model.2.weight and model.2.bias"),
    "list_only_cat": ("relation.joined-copy", "shares no memory with ts[0] and ts[1]"),
    "list_stack": ("relation.joined-copy", "shares no memory with a and b"),
    "list_item_view": ("relation.view", "v is a view of ts[0]"),
    "tuple_item_mul": ("relation.computed", "computed from pair[0]"),
    "requires_grad_call": ("change.requires-grad-on", "`x.requires_grad_()` made x a leaf that requires grad"),
    "requires_grad_attr": ("change.requires-grad-on", "`x.requires_grad = True` made x a leaf"),
    "requires_grad_off": ("change.requires-grad-off", "x no longer requires grad"),
    "requires_grad_attr_off": ("change.requires-grad-off", "x no longer requires grad"),
    "requires_grad_nonleaf_noop": ("change.requires-grad-unchanged", "changed nothing: v already requires grad"),
    "requires_grad_detached": ("change.requires-grad-on", "shares memory with x, but gradients into a won't reach x"),
}


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_each_family_gets_its_note_naming_the_call(name: str) -> None:
    kind, phrase = FAMILIES[name]
    notes = [n for n in _steps(name)[-1].explanations if n.kind == kind]
    assert any(phrase in n.text for n in notes), [n.text for n in _steps(name)[-1].explanations]


def test_no_value_equality_provenance() -> None:
    # k is copied from arr; j merely holds equal values: no note may say k comes from j.
    step = _steps("tensor_after_from_numpy")[-1]
    assert all("j" not in n.tensors[1:] for n in step.explanations), [n.text for n in step.explanations]


def test_deepcopy_reference_is_version_one() -> None:
    assert copy.deepcopy(torch.ones(1, requires_grad=True))._version == 1


def test_equal_values_computed_in_the_graph_are_not_called_a_copy() -> None:
    trace = run_source(HEAD + SCRIPTS["computed_equal_values"], origin="<t>")
    (relu,) = [o for s in trace.steps for o in s.ops if o.call == "torch.relu(w * x)"]
    assert [r.relation for r in relu.results[0].relations if r.op is None] == ["new"]
    mul = next(o for s in trace.steps for o in s.ops if o.call == "w * x")
    assert [r.relation for r in mul.results[0].relations] == ["new", "new"]  # w * 1 equals w and x
    texts = " ".join(n.text for s in trace.steps for n in s.explanations)
    assert "copy of w" not in texts and "computed from" in texts


@pytest.mark.parametrize("name", ["zeros_times_two", "relu_positive", "abs_nonnegative_chain", "comprehension_stack"])
def test_equal_values_without_a_graph_are_not_called_a_copy(name: str) -> None:
    # c = b * 2 of zeros equals b; relu of positive numbers equals its input: computed, not copied.
    step = _steps(name)[-1]
    named = [r for o in step.ops for res in o.results if res.name is not None for r in res.relations]
    assert named and all(r.relation != "copy" for r in named), name
    assert not any("holds" in n.text or "copy" in n.text for n in step.explanations), [
        n.text for n in step.explanations
    ]


def test_a_copy_through_a_temporary_is_still_one() -> None:
    # a.clone().view(6): the view keeps the clone's values, so b holds a's values (a copy);
    # a.clone().abs() computes new ones (equal to a's here): no copy of a.
    (op,) = [o for o in _steps("clone_then_view")[-1].ops if o.call == "a.clone().view(6)"]
    assert [r.relation for r in op.results[0].relations] == ["view", "copy"]
    (op,) = [o for o in _steps("abs_nonnegative_chain")[-1].ops if o.call == "a.clone().abs()"]
    assert [r.relation for r in op.results[0].relations] == ["new", "new"]


def test_module_parameters_are_inputs_with_their_table_names() -> None:
    # model(x) is the functional calls its forward made (linear, relu, linear), each recorded with the call
    # as written; the parameters are their inputs, by the table's names.
    step_ops = _steps("sequential_call")[-1].ops
    ops = [o for o in step_ops if o.call == "model(x)"]
    assert [o.function for o in ops] == ["linear", "relu", "linear"]
    named = [i.name for o in ops for i in o.inputs if i.name is not None]
    assert named == ["x", "model.0.weight", "model.0.bias", "model.2.weight", "model.2.bias"]
    last = ops[-1]
    rels = {
        (last.inputs[r.input] if r.op is None else step_ops[r.op].inputs[r.input]).name: (r.relation, r.graph)
        for r in last.results[0].relations
    }
    assert rels["x"] == ("new", False)
    assert all(rels[n] == ("new", True) for n in ("model.0.weight", "model.2.bias"))


def test_frozen_or_no_grad_module_call_claims_no_graph() -> None:
    for name in ("frozen_module_call", "module_call_no_grad"):
        step = next(s for s in _steps(name) if s.source == "out = fc1(x)")
        (op,) = [o for o in step.ops if o.call == "fc1(x)"]
        assert not any(r.graph for r in op.results[0].relations), name
        assert not any("computed from" in n.text for n in step.explanations), name


def test_function_arguments_and_list_items_are_named_as_the_table_names_them() -> None:
    source = (
        HEAD + "def f(u, ts):\n    w = u.view(3, 1)\n    return torch.cat(ts)\n"
        "a = torch.arange(3.0)\nlst = [torch.ones(2), torch.zeros(2)]\nr = f(a, lst)"
    )
    steps = run_source(source, keep_going=False).steps
    view = next(s for s in steps if s.source == "w = u.view(3, 1)")
    assert view.ops[0].inputs[0].name == "f:u"
    cat = next(s for s in steps if s.source == "return torch.cat(ts)")
    # the list the function was given is the caller's lst: its items are named lst[0], lst[1]
    assert [i.name for i in cat.ops[0].inputs] == ["lst[0]", "lst[1]"]
    call = next(s for s in steps if s.source == "r = f(a, lst)" and s.ops)
    assert [i.name for i in call.ops[0].inputs] == ["a", "lst[0]", "lst[1]"]
