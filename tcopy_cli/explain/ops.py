"""Notes from the operation record: what each call of the step did, and why.

Provenance comes only from ``Step.ops`` (what the interpreter ran, with relations
measured when each operation returned), never from values that happen to be equal.
Each note names the call as written and the reason a learner can't see in the table:
a call that returned its own input, a reshape that had to copy, indexing that copies,
NumPy bridges (``provenance``), ``x.data = ...``, rebinding vs in-place, writes into views
of graph tensors (``effects``), tensors born at version 1, one object a call gave twice, a
copied module's parameters (here). ``op_notes`` runs them all, once per step.
"""

from __future__ import annotations

from dataclasses import replace

from tcopy_cli.explain.effects import effect_notes
from tcopy_cli.explain.facts import Findings, StepFacts, agree, names_text, note, quoted_call
from tcopy_cli.explain.provenance import Source, disjoint_text, relation_note, source_record, sources
from tcopy_cli.trace.records import ArrayRecord, Note, OpRecord, OpResult, TensorRecord
from tcopy_cli.trace.scriptnames import is_local, script_name

NUMPY_BRIDGES = frozenset({"from_numpy", "as_tensor", "asarray", "numpy"})
STRUCTURAL = frozenset({"bind", "rebind"})


def step_input_names(ops: list[OpRecord]) -> set[str]:
    """Every script name the step's operations were given."""
    return {i.name for op in ops for i in op.inputs if i.name is not None}


def defining(ops: list[OpRecord], name: str) -> tuple[OpRecord, OpResult] | None:
    """The last operation (not a plain binding) whose result the statement bound to ``name``."""
    found: tuple[OpRecord, OpResult] | None = None
    bound: tuple[OpRecord, OpResult] | None = None
    for op in ops:
        if op.error is not None:
            continue
        for res in op.results:
            if res.name == name or name in res.names:
                if op.kind in STRUCTURAL:
                    bound = (op, res)
                else:
                    found = (op, res)
    return found or bound


def op_notes(f: StepFacts) -> list[Note]:
    """Notes for the step's operations (names they explain are left to no other relation rule)."""
    return list(_analysis(f)[0])


def explained_names(f: StepFacts) -> set[str]:
    """Tensor and array names of the step that an operation-record note explains."""
    return _analysis(f)[1]


def _analysis(f: StepFacts) -> tuple[list[Note], set[str]]:
    """(notes, explained names), worked out once per step from the facts alone."""
    got = f.cache.get("ops")
    if got is None:
        explained: set[str] = set()
        known = f.tensors.keys() | f.step.arrays.keys()
        notes = [replace(n, tensors=tuple(t for t in n.tensors if t in known)) for n in _analyse(f, explained)]
        got = f.cache["ops"] = (notes, explained)
    return got  # type: ignore[no-any-return]


def _analyse(f: StepFacts, explained: set[str]) -> list[Note]:
    ops = f.step.ops
    if not ops:
        return []
    notes = Findings()
    first: dict[tuple[int, int], str] = {}  # (operation, object) -> the first name of it the step bound
    for name in f.new_names:
        found = defining(ops, name)
        if found is None or (is_local(name) and found[0].kind in STRUCTURAL):
            continue
        op, res = found
        b = f.tensors[name]
        earlier = first.setdefault((op.index, b.object_id), name)
        if earlier != name:  # one object the call gave twice (deepcopy's memo: one copy per object)
            explained.add(name)
            notes.add([_same_result(op, name, earlier)])
            continue
        if op.function == "deepcopy" and res.item.startswith("."):  # a module's parameters: one note
            src = _preferred(sources(ops, op, res))
            if src is not None and src.relation == "copy":  # a parameter of the new module, a copy of one given
                explained.add(name)
                notes.group(("module", op.index), name)
                continue
        made = _result_notes(f, ops, op, res, name) + _shared_results(f, op, name, first)
        born = _born_reason(op, res, b)
        if made or born:
            explained.add(name)
        notes.add(made)
        if born is not None:  # the names one call as written made at one version, for one reason: one note
            notes.group((_written_as(ops, op), b.version, born), name)
    _whole_modules_born(f, notes, explained)
    by_index = {op.index: op for op in ops}
    out = notes.notes(
        lambda key, names: (
            _module_note(f, by_index[key[1]], names)
            if key[0] == "module"
            else _born_note(by_index[key[0]], key[1], key[2], names)
        )
    )
    for name, a in f.step.arrays.items():
        old = f.state.previous_arrays.get(name)
        if old is not None and old.data_ptr == a.data_ptr:
            continue
        found = defining(ops, name)
        if found is not None:
            made = _array_notes(ops, found[0], found[1], name, a)
            if made:
                explained.add(name)
                out += made
    for op in ops:
        if op.error is None:
            out += effect_notes(f, op, explained)
    return out


def _written_as(ops: list[OpRecord], op: OpRecord) -> int:
    """The first operation of the step made by the same call as written (``copy.deepcopy(xs)`` runs
    one ``__deepcopy__`` per tensor)."""
    return next(o.index for o in ops if (o.call, o.line, o.function) == (op.call, op.line, op.function))


def _same_result(op: OpRecord, name: str, earlier: str) -> Note:
    """A call that returned one tensor object twice (``deepcopy`` of a list holding one tensor twice)."""
    why = (
        " deepcopy copies each object once (it remembers what it copied), so a container that held one tensor "
        "twice gets one copy, held twice."
        if op.function == "deepcopy"
        else ""
    )
    return note(
        "relation.same-object",
        f"{name} is the same tensor object as {earlier}: {quoted_call(op)} gave one tensor for both.{why} A change "
        f"through one name shows through the other.",
        [name, earlier],
        op=op.index,
    )


def _shared_results(f: StepFacts, op: OpRecord, name: str, first: dict[tuple[int, int], str]) -> list[Note]:
    """A result on the memory of another result of the same call as written, with a version counter
    of its own (``copy.deepcopy([a, a[1:]])``: the storage is copied once, each tensor set onto it anew)."""
    b = f.tensors[name]
    by_index = {o.index: o for o in f.step.ops}
    for (index, _), other in first.items():
        made = by_index.get(index)
        if made is None or (made.call, made.line) != (op.call, op.line) or other == name or other not in f.tensors:
            continue
        r = f.tensors[other]
        if r.storage != b.storage or not b.version_counter or r.version_counter == b.version_counter:
            continue
        how = (
            " (deepcopy copies a storage once, and each tensor that used it is set onto the copy)"
            if op.function == "deepcopy"
            else ""
        )
        return [
            note(
                "relation.untracked-alias",
                f"{name} shares {other}'s memory ({r.storage}){how}, but each has its own version counter: "
                f"an in-place write through one changes the other's values without moving its version, so "
                f"autograd would not notice it.{disjoint_text(r, b)}",
                [name, other],
                op=op.index,
            )
        ]
    return []


def _module_note(f: StepFacts, op: OpRecord, names: list[str]) -> Note:
    """The parameters of a module that ``copy.deepcopy(model)`` made."""
    pairs: list[tuple[str, str]] = []
    for n in names:
        found = defining(f.step.ops, n)
        src = _preferred(sources(f.step.ops, found[0], found[1])) if found is not None else None
        pairs.append((n, src.name if src is not None else "?"))
    made, given = [n for n, _ in pairs], [s for _, s in pairs]
    dropped = [
        s for n, s in pairs if (a := f.tensors.get(s)) is not None and a.grad is not None and f.tensors[n].grad is None
    ]
    grads = (
        f" {names_text([s + '.grad' for s in dropped])} {agree(dropped, 'was', 'were')} not copied: the copies "
        f"start with no .grad."
        if dropped
        else ""
    )
    return note(
        "relation.module-copy",
        f"{quoted_call(op)} made a new module whose parameters {names_text(made)} hold the values of "
        f"{names_text(given)} in new memory: independent copies, leaves of their own with no autograd link to "
        f"the originals, so training one module leaves the other unchanged.{grads}",
        [*made, *given],
        op=op.index,
    )


_STRENGTH = {"same-object": 0, "view": 1, "alias": 2, "shares-memory": 3, "copy": 4, "new": 5}


def _preferred(srcs: list[Source]) -> Source | None:
    """The source a note is about: the first direct one with the closest measured relation."""
    if not srcs:
        return None
    direct = [s for s in srcs if s.direct] or srcs
    return min(direct, key=lambda s: _STRENGTH.get(s.relation, 9))


def _result_notes(f: StepFacts, ops: list[OpRecord], op: OpRecord, res: OpResult, name: str) -> list[Note]:
    b = f.tensors[name]
    srcs = sources(ops, op, res)
    src = _preferred(srcs)
    if src is None:
        return []
    if src.name == name and src.relation == "same-object":
        return []
    a = source_record(f, src.name)
    if src.name == name or _rebound_later(ops, op, src.name):
        # x = x.t(), or a, b = b, a: the source is the tensor the name held before this statement
        src = replace(src, name=f"the old {src.name}")
    made = relation_note(f, op, name, b, src, a, srcs)
    return [made] if made is not None else []


def _rebound_later(ops: list[OpRecord], op: OpRecord, name: str) -> bool:
    """Whether an assignment after ``op`` in the same statement bound ``name`` to another object
    (``a, b = b, a``: ``a = b`` read the b of before ``b = a``)."""
    bare = script_name(name)
    return any(o.kind in ("bind", "rebind") and o.function == bare and o.index > op.index for o in ops)


def _whole_modules_born(f: StepFacts, notes: Findings, explained: set[str]) -> None:
    """A module's parameters that start at version 1 for its layers' initialisation: the call's
    operation lists at most ``MAX_RESULT_ITEMS`` of them (the first 16 of a ResNet's 65), so the
    other parameters of that module the step made, at that version, join the note."""
    for key, names in list(notes.groups().items()):
        if not isinstance(key, tuple) or key[0] == "module" or key[2] != "layers":
            continue
        tops = {n.partition(".")[0] for n in names if "." in n}
        for n in f.new_names:
            b = f.tensors.get(n)
            if (
                n not in explained
                and n.partition(".")[0] in tops
                and b is not None
                and b.requires_grad
                and b.is_leaf
                and b.version == key[1]
            ):
                explained.add(n)
                notes.group(key, n)


def _born_reason(op: OpRecord, res: OpResult, b: TensorRecord) -> str | None:
    """Why a call's new result starts at a version above 0 (``deepcopy``, ``layers``, ``layer``,
    ``filled``), or None when it starts at 0 or is not new."""
    if op.kind != "call" or b.version < 1 or any(r.relation in ("same-object", "view", "alias") for r in res.relations):
        return None
    if any(op.bumped):
        return None
    if op.function == "deepcopy":
        return "deepcopy"
    if res.item.startswith(".") and "." in res.item[1:]:
        return "layers"
    if res.item.startswith("."):
        return "layer"
    return "filled"


def _born_note(op: OpRecord, version: int, reason: str, names: list[str]) -> Note:
    """The names ``op`` made that start at ``version`` for one ``reason``: one note."""
    one = len(names) == 1
    it = agree(names, "it", "them")
    if reason == "deepcopy":  # Tensor.__deepcopy__: new_empty([]) then set_() onto the copied storage
        why = (
            f"deepcopy makes {agree(names, 'an empty tensor', 'empty tensors')} and then points {it} at a copy of "
            f"the original memory with set_(), an in-place change that moves the version counter (no values "
            f"are written then)"
        )
        counted = ""
    else:
        why = {
            "layers": "each layer initialises its parameters in place (its reset_parameters)",
            "layer": f"the layer initialises its parameters in place (for example {op.function}'s reset_parameters)",
            "filled": f"the call wrote into {it} in place after creating {it}",
        }[reason]
        counted = (
            "; the version counter counts that write too" if one else "; their version counters count those writes too"
        )
    subject = f"{names[0]} starts" if one else f"{names_text(names)} start"
    text = (
        f"{subject} at version {version}, not 0: {quoted_call(op)} created {it} and {why}{counted}. Nothing is "
        f"wrong with {it}."
    )
    return note("relation.born-version", text, names, op=op.index)


def _array_notes(ops: list[OpRecord], op: OpRecord, res: OpResult, name: str, arr: ArrayRecord) -> list[Note]:
    srcs = sources(ops, op, res)
    if not srcs:
        return []
    src = srcs[0]
    if src.relation == "shares-memory":
        where = f" (storage {arr.storage})" if arr.storage else ""
        return [
            note(
                "relation.numpy-array",
                f"{quoted_call(op)} made the NumPy array {name} on the memory of {src.name}{where}, without copying: "
                f"writes to {name} change {src.name}, and autograd never sees them.",
                [name, src.name],
                op=op.index,
            )
        ]
    if src.relation in ("copy", "new") and op.function in NUMPY_BRIDGES | {"array"}:
        return [
            note(
                "relation.numpy-copy",
                f"{quoted_call(op)} copied {src.name}'s values into the NumPy array {name}: they share no memory.",
                [name, src.name],
                op=op.index,
            )
        ]
    return []
