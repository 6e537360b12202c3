"""Step records: plain data about a run. They never hold a live tensor.

They know no output format: the renderers write them (the JSON Lines objects, under the
spec's names, in ``tcopy_cli.render.jsonl``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from tcopy_cli.trace.layout import byte_span


@dataclass(frozen=True)
class TensorRecord:
    """What one named tensor looked like after a step (spec: jsonl-v1 tensor record)."""

    shape: list[int]
    dtype: str
    device: str
    values: Any
    preview: str
    data_ptr: int
    storage: str
    storage_offset: int
    shares_memory_with: list[str]
    requires_grad: bool
    is_leaf: bool
    grad_fn: str | None
    grad: TensorRecord | None
    version: int
    # Facts beyond the v1 fields (also written to JSON as additional fields).
    version_counter: str = ""
    """A stable label for the version counter (``V1``, ``V2`` ...): equal labels, one shared counter."""
    stride: list[int] = field(default_factory=list)
    element_size: int = 0
    storage_nbytes: int = 0
    shares_version_with: list[str] = field(default_factory=list)
    reaches: list[str] = field(default_factory=list)
    # Identities for relating records of one run (never serialised, never references).
    object_id: int = 0
    node_id: int = 0
    reach_ids: frozenset[int] = frozenset()

    def byte_span(self) -> tuple[int, int]:
        """[start, end) bytes the elements cover inside the storage."""
        return byte_span(self.shape, self.stride, self.storage_offset, self.element_size)


@dataclass(frozen=True)
class ArrayRecord:
    """A NumPy array bound to a name."""

    shape: list[int]
    dtype: str
    values: Any
    preview: str
    data_ptr: int
    shares_memory_with: list[str]
    storage: str | None = None
    """Label of the tensor storage the array's memory lies in, if any."""


@dataclass(frozen=True)
class SavedInfo:
    """A tensor a graph node saved for backward."""

    attr: str
    tensor: str
    saved_version: int
    stale: bool


@dataclass(frozen=True)
class GraphNode:
    """One autograd node: its class name and where its gradients go next."""

    label: str
    op: str
    next: list[str | None]
    variable: list[str] = field(default_factory=list)
    tensors: list[str] = field(default_factory=list)
    saved: list[SavedInfo] = field(default_factory=list)


@dataclass(frozen=True)
class GraphRecord:
    """The autograd graph behind the named tensors after a step."""

    roots: dict[str, str]
    nodes: dict[str, GraphNode]
    views: dict[str, str]

    def signature(self) -> tuple[Any, ...]:
        """What identifies the structure (for 'did this step change the graph?')."""
        return (
            tuple(sorted(self.roots.items())),
            tuple(
                (n.label, n.op, tuple(n.next), tuple(n.variable), tuple((s.attr, s.stale) for s in n.saved))
                for n in self.nodes.values()
            ),
            tuple(sorted(self.views.items())),
        )


@dataclass(frozen=True)
class SavedEvent:
    """Something that happened to a tensor autograd saved for backward (made in trace.graph)."""

    kind: str  # "bumped": in-place change torch will catch; "silent": changed, no version bump; "unchecked": too large
    node: str
    attr: str
    tensor: str
    saved_version: int
    affects: tuple[str, ...] = ()


@dataclass(frozen=True)
class ErrorInfo:
    """A failing statement: exception class name, message and a plain explanation.

    The run records only the type and message; the explain pass fills ``explanation``
    and sets ``explained`` when it knows more than the message says.
    """

    type: str
    message: str
    explanation: str = ""
    explained: bool = False
    expected: bool = False
    """The statement's line says ``# expect: NAME`` and the error is one: the intended outcome."""

    @property
    def headline(self) -> str:
        """``Type: first line of the message``, for one-line reports."""
        first = self.message.splitlines()[0] if self.message else ""
        return f"{self.type}: {first}"


@dataclass(frozen=True)
class CaughtInfo:
    """An error a statement raised that a surrounding ``try`` handles (the step is ok)."""

    error: ErrorInfo
    except_line: int


@dataclass(frozen=True)
class OpInput:
    """A tensor or NumPy array an operation was given (receiver, argument, index, old value)."""

    role: str
    """``self``, ``arg0``, ``arg1`` ..., ``key=`` for a keyword, ``index``, ``value``, ``old``."""
    expr: str
    """The expression as written in the script."""
    name: str | None
    """The script name that held this object when the operation ran (None: a temporary)."""
    kind: str = "tensor"
    """``tensor`` or ``ndarray``."""
    from_op: int | None = None
    """Index (in the step's ``ops``) of the operation of this step that produced it."""
    version: int = -1
    """Its version counter before the operation (-1: none, or an array)."""
    contiguous: bool = True
    is_view: bool = False
    base: str | None = None
    """Name of the tensor it is a view of (``t._base``), when a script name holds that."""
    requires_grad: bool = False
    dtype: str = ""
    device: str = ""


@dataclass(frozen=True)
class OpRelation:
    """How one result relates to one input, measured after the operation.

    ``relation``: ``same-object`` (the result is the input); ``view`` (same storage, same
    version counter); ``alias`` (same storage, its own version counter, e.g. ``.data``);
    ``shares-memory`` (a tensor and a NumPy array on the same bytes); ``copy`` (new
    memory holding the input's values); ``new`` (new memory, other values). ``graph``:
    the result's grad_fn reaches the input in the autograd graph.
    """

    input: int
    relation: str
    graph: bool = False
    op: int | None = None
    """None: ``input`` indexes this operation's inputs. Else the index of an earlier
    operation of the step whose result this one consumed (a temporary, as in
    ``a.clone().detach()``), and ``input`` indexes that operation's inputs."""


@dataclass(frozen=True)
class OpResult:
    """A tensor or array an operation returned, and how it relates to each input."""

    name: str | None
    """The script name bound to it after the step (None: a temporary or an unnamed item);
    of several, the one the statement assigned."""
    kind: str = "tensor"
    item: str = ""
    """Where it sits in what the call returned: ``""`` (the value itself), ``[0]``, ``.weight``."""
    relations: list[OpRelation] = field(default_factory=list)
    version: int = -1
    grad_fn: str | None = None
    requires_grad: bool = False
    contiguous: bool = True
    dtype: str = ""
    device: str = ""
    names: list[str] = field(default_factory=list)
    """Every script name bound to it after the step."""


MAX_LISTED_ITEMS = 1000
"""Items of one list, tuple or dict that a step's records list (the first ones); ``Step.unlisted`` counts the rest."""
MAX_VISITED_ITEMS = 5000
"""Items of lists, tuples, dicts and modules looked at in all per step (so nested lists can't make observing slow)."""

RESET_CALLS = frozenset({"zero_grad"})
"""Calls recorded though no tensor goes in or out: ``opt.zero_grad()`` drops or zeroes grads, which
the notes tell apart from what a backward in the same step did."""


@dataclass(frozen=True)
class OpRecord:
    """One operation a step performed, as the interpreter ran it (never guessed afterwards).

    ``kind``: ``call`` (a function or method), ``index`` (``x[i]``), ``binop``/``unary``/
    ``compare`` (operators on tensors), ``augassign`` (``x += y``), ``setitem``
    (``x[i] = v``), ``setattr`` (``q.data = ...``, ``x.grad = None``), ``rebind`` (a name
    that held a tensor now names another object).
    """

    index: int
    kind: str
    call: str
    """The operation as written (``u.reshape(-1)``, ``src[idx]``, ``q.data = torch.zeros(5)``)."""
    function: str = ""
    """The called function or method's name (``reshape``, ``from_numpy``), the attribute or target name."""
    line: int = 0
    inputs: list[OpInput] = field(default_factory=list)
    results: list[OpResult] = field(default_factory=list)
    bumped: list[int] = field(default_factory=list)
    """Indices of inputs whose version counter moved during the operation."""
    detail: dict[str, Any] = field(default_factory=dict)
    """Kind-specific facts: ``index`` (basic, advanced, boolean) for indexing;
    ``replaced`` (storage, grad, requires_grad) and before/after facts for attribute
    writes; ``still_held_by`` for a rebinding."""
    error: str | None = None
    """The exception class name when the operation raised."""


@dataclass(frozen=True)
class LoopContext:
    """One loop around a step: where it is, which turn this is, and how many turns it has.

    ``entry`` numbers the times any loop was entered in the run (1, 2, ...), so turns of
    one run of a loop can be told from turns of the same loop entered again (a loop
    inside another loop, or inside a function called twice).
    """

    line: int
    iteration: int
    total: int | None = None
    """Turns the loop will make when known (``len`` of what a ``for`` walks); None for ``while``."""
    entry: int = 0
    suspends: bool = False
    """The loop runs in a generator (``--trust``): each ``yield`` leaves it for the code that asked
    for the next item, and the next item takes it up again in its next turn."""


@dataclass(frozen=True)
class CallSite:
    """A running call of a script function and the line that called it."""

    function: str
    line: int


Severity = Literal["info", "warning"]
WARNING_MARK = "⚠ "


@dataclass(frozen=True)
class Note:
    """One plain-language note about a step, made by an explain rule from its facts.

    ``kind`` names the rule's finding (``relation.view``, ``grad.accumulated`` ...),
    ``tensors`` the names it is about. ``severity`` is ``warning`` for a note that
    means wrong results or a coming failure the user may not see otherwise.
    """

    kind: str
    severity: Severity
    text: str
    tensors: tuple[str, ...] = ()
    op: int | None = None
    """Index (in the step's ``ops``) of the operation the note is about, if one is."""
    fix: str | None = None
    """A line of code the note says to add (``opt.zero_grad()``), where it gives one."""

    @property
    def line(self) -> str:
        """The note as one line of text (the JSON ``notes`` entry): warnings carry a ⚠ mark."""
        return WARNING_MARK + self.text if self.severity == "warning" else self.text


@dataclass(frozen=True)
class Step:
    """One executed statement and the state after it.

    A run emits facts only (``explanations`` empty, errors unexplained); the explain
    pass returns a copy with notes and error explanations filled in.
    """

    index: int
    line: int
    source: str
    status: str
    error: ErrorInfo | None
    stdout: str
    warnings: list[str]
    tensors: dict[str, TensorRecord]
    arrays: dict[str, ArrayRecord]
    narration: list[str] = field(default_factory=list)
    grad_enabled: bool = True
    saved_events: list[SavedEvent] = field(default_factory=list)
    graph: GraphRecord | None = None
    function: str | None = None
    depth: int = 0
    caught: CaughtInfo | None = None
    explanations: list[Note] = field(default_factory=list)
    expect: str | None = None
    """The exception class a trailing ``# expect: NAME`` comment on the statement names."""
    value: str | None = None
    """The repr of an expression statement's value (``tcopy repl`` only, like Python's REPL)."""
    hooks: list[str] = field(default_factory=list)
    """Script functions torch called back during this statement (hooks and a custom Function's
    backward during backward, functions given to jacobian or gradcheck), in order of first
    call; they run without steps of their own."""
    ops: list[OpRecord] = field(default_factory=list)
    """The operations the statement performed, in the order they finished."""
    hooks_replaced: list[str] = field(default_factory=list)
    """Of ``hooks``, those that returned a tensor other than the one they were given first: a tensor
    hook that does so replaces the gradient flowing through its tensor."""

    loops: tuple[LoopContext, ...] = ()
    """Enclosing loops, outermost first (loops of calling code included)."""
    contexts: tuple[str, ...] = ()
    """Grad-mode blocks around the step, outermost first: ``no_grad``, ``inference_mode`` ..."""
    calls: tuple[CallSite, ...] = ()
    """Script-function calls running, outermost first (``function`` is the innermost's name)."""
    loops_ended: list[int] = field(default_factory=list)
    """Entries of the loops that ended since the step before. A generator's loop
    (``LoopContext.suspends``, ``--trust``) is left at every ``yield``, so no step shows when it is
    done; and a loop's last turn may have no step (``if i == 2: break``)."""
    loops_ended_turns: list[int] = field(default_factory=list)
    """The turns each of ``loops_ended`` ran (the last one counts, cut short or not)."""
    unlisted: dict[str, int] = field(default_factory=dict)
    """Lists, tuples and dicts holding tensors with more items than ``tensors`` lists (the first
    ``MAX_LISTED_ITEMS`` of each): name and how many items past those are not listed."""
    observed: bool = True
    """False where nothing was looked at after the statement (the run's time ran out, or the
    process running it ended): ``tensors`` and ``arrays`` are then empty, not removed."""

    @property
    def expected(self) -> bool:
        """The step raised the error its ``# expect:`` comment names (the intended outcome)."""
        return self.error is not None and self.error.expected

    @property
    def missed(self) -> bool:
        """The step's ``# expect:`` comment names an error, and the statement raised none."""
        return self.expect is not None and self.error is None and self.caught is None

    @property
    def notes(self) -> list[str]:
        """The notes as lines of text."""
        return [n.line for n in self.explanations]


TRUSTED_HEADER = "trusted (--trust): nothing confines the script; it has your files, network and environment"
"""How a run's header says that ``--trust`` lifted the wall."""


@dataclass(frozen=True)
class RunInfo:
    """Facts about a run, known before its first step."""

    tcopy: str
    torch: str
    device: str
    source: str
    title: str = ""
    # What the installed torch can't give tcopy (compat.degraded); empty on current releases.
    degraded: list[str] = field(default_factory=list)
    confinement: str = "none"
    """Kernel protections active in the process running the script (tcopy_cli.confine)."""
    trusted: bool = False
    """``--trust``: the wall was lifted (the script ran unconfined)."""
    allow_read: list[str] = field(default_factory=list)
    """What the confined script may read beyond Python's installation (``--allow-read``)."""

    @property
    def reads(self) -> str:
        """``; reads /data, /home/u/proj`` for the header (empty where nothing was allowed)."""
        return f"; reads {', '.join(self.allow_read)}" if self.allow_read and not self.trusted else ""


@dataclass(frozen=True)
class RunSummary:
    """How a run ended."""

    steps: int
    errors: int
    stopped_by: str | None = None
    rejected: bool = False
    expected: int = 0
    """Error steps (counted in ``errors`` too) whose error the line's ``# expect:`` named."""
    missing: int = 0
    """Steps marked ``# expect: NAME`` that raised nothing."""
    loops_ended: list[int] = field(default_factory=list, compare=False)
    """The loops that ended after the last step, as ``Step.loops_ended`` (not in JSON; not part of
    how the run ended: a run stopped inside a loop leaves it in one engine, not in the other)."""
    loops_ended_turns: list[int] = field(default_factory=list, compare=False)

    @property
    def unexpected(self) -> int:
        """Error steps nobody expected."""
        return self.errors - self.expected

    @property
    def status(self) -> str:
        """``ok`` when every error step was expected, every expected error happened, and the
        script was not refused."""
        return "ok" if self.unexpected == 0 and self.missing == 0 and not self.rejected else "error"


R = TypeVar("R")


def evolve(record: R, **changes: Any) -> R:
    """``dataclasses.replace`` for a record, without running its ``__init__`` again.

    Records are frozen and have no ``__post_init__``, so a copy of the fields with
    ``changes`` applied is the same record ``replace`` would build (the explain pass does
    this for every step).
    """
    new: R = object.__new__(type(record))  # type: ignore[arg-type]
    fields = dict(record.__dict__)
    unknown = changes.keys() - fields.keys()
    if unknown:
        raise TypeError(f"{type(record).__name__} has no field {sorted(unknown)[0]!r}")
    fields.update(changes)
    new.__dict__.update(fields)
    return new


def _direct_init(cls: type) -> Callable[..., None]:
    """An ``__init__`` for a frozen record that fills its ``__dict__`` directly.

    It takes the same arguments as the one ``dataclass`` generates, with the same defaults
    (a ``default_factory`` is called per instance), and builds the same object; that one
    sets each field through ``object.__setattr__`` (the price of ``frozen``), which cost
    the worker about a twentieth of its time per step (benchmarks/record_init.py; a loop of small in-place
    writes). Frozen still holds: assigning a field afterwards raises as before.
    """
    env: dict[str, Any] = {"_MISSING": dataclasses.MISSING}
    params: list[str] = []
    body: list[str] = []
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            env[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
            body.append(f"d[{f.name!r}] = {f.name}")
        elif f.default_factory is not dataclasses.MISSING:
            env[f"_factory_{f.name}"] = f.default_factory
            params.append(f"{f.name}=_MISSING")
            body.append(f"d[{f.name!r}] = _factory_{f.name}() if {f.name} is _MISSING else {f.name}")
        else:
            params.append(f.name)
            body.append(f"d[{f.name!r}] = {f.name}")
    source = f"def __init__(self, {', '.join(params)}):\n    d = self.__dict__\n" + "".join(
        f"    {line}\n" for line in body
    )
    exec(source, env)  # tcopy's own code, made from the field names above
    init: Callable[..., None] = env["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


for _cls in [v for v in list(globals().values()) if isinstance(v, type) and dataclasses.is_dataclass(v)]:
    if _cls.__module__ == __name__ and _cls.__dataclass_params__.frozen:  # type: ignore[attr-defined]
        _cls.__init__ = _direct_init(_cls)  # type: ignore[method-assign]
del _cls
