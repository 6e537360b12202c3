"""What tcopy measures on the installed torch release, checked against plain torch.

These run on every release in docs/compatibility.md (scripts/torch-compat.sh), so each
compares tcopy with what that release itself does rather than with a fixed answer.
"""

from __future__ import annotations

import json

import pytest
import torch

from tcopy_cli.engine import run_source
from tcopy_cli.render.jsonl import start_json, step_json
from tcopy_cli.trace import compat, observe
from tcopy_cli.trace import labels as storage_labels
from tcopy_cli.trace.graph import version_groups


def test_version_setter_sets_and_restores_the_counter() -> None:
    setter = compat.version_setter()
    assert setter is not None, "every release from 2.1 on has a form of _unsafe_set_version_counter"
    t = torch.zeros(2)
    t.add_(1)
    setter(t, 41)
    assert t._version == 41
    setter(t, 1)
    assert t._version == 1


def test_version_groups_match_plain_torch() -> None:
    a = torch.zeros(4)
    view = a[1:]
    data = a.data
    detached = a.detach()
    members = [("a", a), ("view", view), ("data", data), ("detached", detached)]
    before = {n: t._version for n, t in members}
    groups = version_groups([members])
    assert {n: t._version for n, t in members} == before  # the probe changes nothing
    # plain torch: an in-place change to a bumps the counter of every tensor sharing it
    a.add_(1)
    expected = {n for n, t in members if n != "a" and t._version != before[n]}
    assert set(groups["a"]) == expected
    assert "data" not in expected and "view" in expected


def test_degraded_facts_are_said_in_the_start_event() -> None:
    event = json.loads(json.dumps(start_json(run_source("x = 1").info)))
    said = event.get("degraded", [])
    assert said == compat.degraded()
    t = torch.zeros(1)
    stable = t.untyped_storage() is t.untyped_storage()
    assert any(s.startswith("storage labels") for s in said) == (not stable)
    assert any("not measurable" in s for s in said) == (compat.version_setter() is None)


@pytest.mark.parametrize("by_object", [True, False])
def test_storage_labels_follow_storage_lifetimes(monkeypatch: pytest.MonkeyPatch, by_object: bool) -> None:
    """Both ways of identifying storages give the labels plain torch's storages call for."""
    if by_object and not compat.storage_objects_preserved():
        pytest.skip("this torch makes a new storage object per call (weak references to one crash)")
    monkeypatch.setattr(storage_labels, "storage_objects_preserved", lambda: by_object)
    obs = observe.Observer()

    def labels(ns: dict[str, object]) -> dict[str, str]:
        snap = obs.snapshot(ns)
        return {n: r.storage for n, r in snap.tensors.items()}

    a = torch.zeros(4)
    first = labels({"a": a})["a"]
    b = a[1:]
    assert labels({"a": a, "b": b}) == {"a": first, "b": first}
    # An array keeps the memory alive while no tensor names it: the label stays.
    n = a.numpy()
    del a, b
    obs.snapshot({"n": n})
    c = torch.from_numpy(n)
    assert c.untyped_storage().data_ptr() == n.__array_interface__["data"][0]
    assert labels({"n": n, "c": c})["c"] == first
    # Once nothing holds it, the label is retired: new memory gets a new label, even
    # at the same address, and even when no step saw the old one go.
    del n, c
    d = torch.zeros(4)
    e = torch.zeros(4)
    later = labels({"d": d, "e": e})
    assert first not in later.values() and later["d"] != later["e"]
    # Resizing a storage in place keeps its label (same storage, more memory).
    d.resize_(1000)
    assert labels({"d": d, "e": e}) == later
    # A storage freed and another allocated between two looks (inside one step): the
    # allocator often hands out the same addresses again, the labels still differ.
    seen = set(later.values())
    for _ in range(20):
        del e
        e = torch.zeros(4)
        label = labels({"d": d, "e": e})["e"]
        assert label not in seen
        seen.add(label)


def test_negative_size_left_by_resize_is_reported() -> None:
    """Some releases (2.1-2.4) set a negative size before refusing it in resize_."""
    if not hasattr(torch.zeros(1).untyped_storage(), "resizable"):
        pytest.skip("this torch can't tell whether memory can grow, so tcopy refuses resize_ here")
    plain = torch.zeros(3)
    with pytest.raises(RuntimeError) as raised:
        plain.resize_(-1)
    trace = run_source("a = torch.zeros(3)\na.resize_(-1)\n")
    step = trace.steps[-1]
    assert step.error is not None and step.error.message == str(raised.value)
    record = step.tensors["a"]
    assert record.shape == list(plain.shape)
    if any(s < 0 for s in plain.shape):
        assert record.values is None and "negative size" in record.preview
    else:
        assert record.values == plain.tolist()


def test_unmeasurable_version_counter_is_said(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where no setter form works, sharing is reported empty and the output says why."""
    import io

    from rich.console import Console

    from tcopy_cli.pipeline import run_source
    from tcopy_cli.render.jsonl import JsonRenderer
    from tcopy_cli.render.table import TableRenderer

    monkeypatch.setattr(compat, "version_setter", lambda: None)
    a = torch.zeros(2)
    assert version_groups([[("a", a), ("v", a[1:])]]) == {}
    release = torch.__version__.split("+")[0]
    said = f"version counter sharing: not measurable on torch {release}"
    # In-process (the patched probe can't reach the command line's worker process),
    # through the same renderers the command line uses.
    trace = run_source("a = torch.zeros(2)\nv = a[1:]")
    assert trace.summary is not None
    console = Console(file=io.StringIO(), width=200, no_color=True)
    out = io.StringIO()
    for renderer in (TableRenderer(console), JsonRenderer(out)):
        renderer.start(trace.info)
        for step in trace.steps:
            renderer.step(step)
        renderer.end(trace.summary)
    assert f"degraded: {said}" in console.file.getvalue()  # type: ignore[attr-defined]
    lines = out.getvalue().splitlines()
    start = json.loads(lines[0])
    assert any(s.startswith(said) for s in start["degraded"])
    buffer = io.StringIO()
    TableRenderer(Console(file=buffer, width=200, no_color=True)).start(trace.info)
    assert f"degraded: {said}" in buffer.getvalue()
    step = json.loads(json.dumps(step_json(trace.steps[-1])))
    assert step["tensors"]["v"]["shares_version_with"] == []
    from tcopy_cli.trace.compare import compare_one

    row = compare_one("x.detach()", "x = torch.ones(2, requires_grad=True)")
    assert row.shares_version_counter is None and row.shares_storage is True


def test_an_alarm_right_after_the_thread_count_changes_leaves_it_restored(monkeypatch: pytest.MonkeyPatch) -> None:
    """The --timeout alarm raises as soon as a call returns; observing must not leave torch
    on one thread (on 2.1 and 2.4 a one-thread BatchNorm rounds differently)."""
    before = torch.get_num_threads()
    real = torch.set_num_threads

    class Alarm(Exception):
        pass

    def set_then_alarm(n: int) -> None:
        real(n)
        if n == 1:
            raise Alarm

    monkeypatch.setattr(torch, "set_num_threads", set_then_alarm)
    try:
        with pytest.raises(Alarm):
            observe.Observer().snapshot({"t": torch.ones(3)})
        assert torch.get_num_threads() == before
    finally:
        real(before)


def test_observing_leaves_a_tensor_resizable() -> None:
    """Observing must not change what the script can do next (NumPy views pin a storage's size)."""
    t = torch.zeros(3)
    observe.Observer().snapshot({"t": t})
    t.resize_(1000)
    assert t.shape == (1000,)
