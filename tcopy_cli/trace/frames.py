"""The parent's one strict decoder for the worker's frames.

The worker runs the script, and from the engine's rewrite on a script is real Python there:
it can write any bytes on the frame pipe. So every line the parent reads goes through
``FrameDecoder.decode``, which returns a ``Frame`` only when the line is, exactly, a frame
the worker's ``Channel`` writes, and raises ``WireError`` otherwise (what was wrong, in a
few words). Nothing else reads the pipe.

What is checked, in this order:

- size: at most ``MAX_FRAME_BYTES`` bytes, and at most ``MAX_CONTAINERS`` lists and objects
  (a line of ``[[],[],…]`` would take twenty times its size in memory);
- JSON: parsed by orjson (already the worker's encoder: strict, in C, no NaN or Infinity,
  valid UTF-8 only, nesting at most 1,024 levels, an integer past 64 bits read as a float,
  a number that overflows a double refused). A line orjson refuses is read again by the
  standard parser only where it holds a ``\\uD8xx``–``\\uDFxx`` escape (the worker's
  standard encoder writes a lone surrogate so), with the same rules (nesting bounded by the
  recursion limit);
- schema: each frame kind has exactly its fields, each decoded as its annotation says
  (``decoders``: records field by field, plain data at most ``MAX_VALUE_DEPTH`` deep);
- a step's own facts: consecutive indexes are the caller's (``supervise``); here, its status
  agrees with its error, its unlisted counts are counts, a step not observed carries no
  records, and a tensor sent as unchanged names one that was sent.

Decoding costs about what the former object-hook decoder did (benchmarks/wire_probe.py).
Nothing here imports torch.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from typing import Any, NamedTuple

import orjson

from tcopy_cli.trace import records
from tcopy_cli.trace.decoders import REC, SAME, TAGS, decode_as, kind_name, named_pairs, show
from tcopy_cli.trace.wire import WireError

MAX_FRAME_BYTES = 64 * 1024**2
"""The longest frame the parent reads (a step of 5,000 tensors with 100 values each is ~15 MB)."""
MAX_CONTAINERS = 2_000_000
"""Lists and objects in one frame (counted as the ``[`` and ``{`` bytes that can open one)."""
INT_MIN, INT_MAX = -(2**63), 2**64 - 1
"""What an int on the wire may be: what orjson reads as an int (a Python int past it is a float there)."""


class Frame(NamedTuple):
    """One decoded frame: its kind, its fields (records built), and whether its text is plain."""

    kind: str
    data: dict[str, Any]
    plain: bool
    """No string in it (nor in a tensor record it refers to) holds a character ``printable``
    would escape: the views can show it as it is."""


# --- JSON -----------------------------------------------------------------------------


def _int64(text: str) -> int | float:
    """An int as orjson reads it: within 64 bits an int, past them a float, past a double refused."""
    if len(text) <= 21 and INT_MIN <= (n := int(text)) <= INT_MAX:
        return n
    return _finite(text)


def _finite(text: str) -> float:
    x = float(text)
    if not math.isfinite(x):
        raise WireError("a number out of range")
    return x


def _constant(name: str) -> Any:
    raise WireError(f"{name} is not JSON")


_FALLBACK = json.JSONDecoder(parse_int=_int64, parse_float=_finite, parse_constant=_constant)
_IN_TEXT = re.compile(rb"(?<=[\w\])\"'])[\[{]")
"""A bracket right after a letter, digit, bracket or quote: in JSON only inside a string."""
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def parse(line: bytes) -> Any:
    """The JSON value of one frame line, within the size and depth bounds; WireError otherwise."""
    if len(line) > MAX_FRAME_BYTES:
        raise WireError(f"a frame of {len(line):,} bytes (at most {MAX_FRAME_BYTES:,})")
    containers = line.count(b"[") + line.count(b"{")
    if containers > MAX_CONTAINERS:  # the brackets of names (xs[0], d["k"]) and previews are no lists
        containers -= _IN_TEXT.subn(b"", line)[1]
        if containers > MAX_CONTAINERS:
            raise WireError(f"a frame of more than {MAX_CONTAINERS:,} lists and objects")
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        if _SURROGATE_ESCAPE.search(line) is None:
            raise WireError(f"not JSON ({str(exc).split(':')[0]})") from None
    try:
        return _FALLBACK.decode(line.decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # WireError is a ValueError
        raise WireError(str(exc) if isinstance(exc, WireError) else f"not JSON ({type(exc).__name__})") from None


# --- frames ----------------------------------------------------------------------------

_POSITION = {"line": int, "col": int, "end_line": int, "end_col": int}
_SCHEMA: dict[str, dict[str, Any]] = {
    "start": {"info": records.RunInfo},
    "running": _POSITION,
    "step": {"step": records.Step},
    "end": {"summary": records.RunSummary},
    "experiment": {"expression": str, "run": str},
    "compare": {"rows": list[dict[str, Any]]},
    "done": {"errors": int},
    "refused": {"line": int | None, "column": int | None, "message": str},
    "rejected": {"info": records.RunInfo, "line": int | None, "column": int | None, "message": str},
    "usage_error": {"message": str},
    "run_error": {"message": str},
    "internal_error": {"type": str, "message": str},
    "hook": {"result": Any},
}
"""Every frame kind the worker sends and the type of each of its fields (worker.py describes them)."""
KINDS = frozenset(_SCHEMA)
_FIELDS = {kind: frozenset(fields) | {"kind"} for kind, fields in _SCHEMA.items()}
_STEP_TENSORS = [f.name for f in dataclasses.fields(records.Step)].index("tensors") + 1
_REFERENCE = {SAME: 1}
_NOT_PLAIN = re.compile(
    rb"\\[ubfr]"  # an escape: \uXXXX (orjson writes one only for a control character), \b, \f, \r
    rb"|[\x00-\x08\x0b-\x1f\x7f]"  # raw C0 (not JSON anyway) and DEL
    rb"|\xc2[\x80-\x9f]"  # C1 (0x9b is CSI)
    rb"|\xd8\x9c|\xe2\x80[\x8e\x8f\xa8-\xae]|\xe2\x81[\xa6-\xa9]"  # bidi controls, line/paragraph separators
    rb"|\xed[\xa0-\xbf]"  # a surrogate
)
"""Bytes of a frame that may stand for a character ``printable`` escapes (tests/trace/test_frames.py
checks that every string it changes is found here, however a worker writes it)."""
_PRINTABLE_ASCII = bytes(range(0x20, 0x7F)) + b"\t\n"
_ESCAPE = re.compile(rb"\\[ubfr]")


def _plain_text(line: bytes) -> bool:
    """Whether no string in the JSON ``line`` can hold a character ``printable`` escapes.

    ``_NOT_PLAIN`` alone takes a few times as long as parsing the line: an ASCII line (most
    frames) is checked for control bytes by ``translate`` and for escapes only where it has a
    backslash, both in C.
    """
    if not line.isascii():
        return _NOT_PLAIN.search(line) is None
    if line.translate(None, _PRINTABLE_ASCII):
        return False
    return b"\\" not in line or _ESCAPE.search(line) is None


def _check_graph(graph: records.GraphRecord) -> None:
    """A graph's roots and edges name its nodes (the views follow them)."""
    nodes = graph.nodes
    if not all(root in nodes for root in graph.roots.values()):
        raise WireError("Step.graph: a root that is not a node")
    if not all(n is None or n in nodes for node in nodes.values() for n in node.next):
        raise WireError("Step.graph: an edge to a node that is not there")


def _check_ops(step: records.Step) -> None:
    """The indexes in a step's operation record point where they may (the notes follow them)."""
    ops = step.ops
    for k, op in enumerate(ops):
        inputs = len(op.inputs)
        if op.index != k or not all(0 <= b < inputs for b in op.bumped):
            raise WireError(f"Step.ops[{k}]: an index out of place")
        if not all(i.from_op is None or 0 <= i.from_op < k for i in op.inputs):
            raise WireError(f"Step.ops[{k}]: an input from an operation that did not run before it")
        for result in op.results:
            for r in result.relations:
                size = inputs if r.op is None else (len(ops[r.op].inputs) if 0 <= r.op < k else -1)
                if not 0 <= r.input < size:
                    raise WireError(f"Step.ops[{k}]: a relation to an input that is not there")
    if not all(n.op is None or 0 <= n.op < len(ops) for n in step.explanations):
        raise WireError("Step.explanations: a note about an operation that is not there")


class FrameDecoder:
    """Decodes one worker's frames in order (a step's unchanged tensors refer to earlier ones)."""

    def __init__(self) -> None:
        self._last: dict[str, records.TensorRecord] = {}
        self._unplain: set[str] = set()
        """Names whose last tensor record came in a frame that was not plain."""

    def decode(self, line: bytes) -> Frame:
        frame = parse(line)
        if type(frame) is not dict:
            raise WireError(f"a frame is an object, not {kind_name(frame)}")
        kind = frame.get("kind")
        if type(kind) is not str or kind not in _FIELDS:
            raise WireError(f"unknown frame kind {show(kind)}")
        fields = _FIELDS[kind]
        if frame.keys() != fields:
            missing, extra = sorted(fields - frame.keys()), sorted(frame.keys() - fields)
            raise WireError(f"a {kind} frame" + (f" without {', '.join(missing)}" if missing else "") + (
                f" with {', '.join(map(show, extra))}" if extra else ""
            ))  # fmt: skip
        plain_text = _plain_text(line)
        if kind == "running":
            if not all(type(frame[k]) is int and 0 <= frame[k] <= INT_MAX for k in _POSITION):
                raise WireError("a running frame's position is four counts")
            return Frame(kind, frame, plain_text)
        if kind == "step":
            step, plain_refs = self._step(frame["step"], plain_text)
            frame["step"] = step
            return Frame(kind, frame, plain_text and plain_refs)
        for name, tp in _SCHEMA[kind].items():
            try:
                frame[name] = decode_as(tp, frame[name])
            except WireError as exc:
                raise WireError(f"{kind}.{name}: {exc}") from None
        return Frame(kind, frame, plain_text)

    def _step(self, data: Any, plain_text: bool) -> tuple[records.Step, bool]:
        """The step, its unchanged tensors resolved; and whether those were all sent in plain frames."""
        raw: list[Any] = data[REC] if type(data) is dict and len(data) == 1 and type(data.get(REC)) is list else []
        tensors = raw[_STEP_TENSORS] if len(raw) > _STEP_TENSORS else None
        refs: list[str] = []
        if type(tensors) is dict:  # references out first: the field's decoder reads records only
            if len(tensors) == 1 and type(pairs := tensors.get("__items")) is list:  # a name like __r
                if not named_pairs(pairs):
                    raise WireError("Step.tensors: __items holds [name, value] pairs")
                tensors = dict(pairs)
            refs = [name for name, rec in tensors.items() if type(rec) is dict and rec == _REFERENCE]
            sent = {k: v for k, v in tensors.items() if type(v) is not dict or v != _REFERENCE} if refs else tensors
            raw[_STEP_TENSORS] = {"__items": [[k, v] for k, v in sent.items()]} if not TAGS.isdisjoint(sent) else sent
        step: records.Step = decode_as(records.Step, data)
        if step.status != ("ok" if step.error is None else "error"):
            raise WireError(f"a step of status {show(step.status)} with error {show(step.error)}")
        if not all(n > 0 for n in step.unlisted.values()):
            raise WireError("a step's unlisted items are counts by name")
        if not step.observed and (step.tensors or step.arrays or refs):
            raise WireError("a step not observed has no records")
        if step.graph is not None:
            _check_graph(step.graph)
        if step.ops or step.explanations:
            _check_ops(step)
        last, unplain = self._last, self._unplain
        for name, rec in step.tensors.items():
            last[name] = rec
            if plain_text:
                unplain.discard(name)
            else:
                unplain.add(name)
        if refs:
            for name in refs:
                if name not in last:
                    raise WireError(f"a reference to {show(name)}, which was never sent")
            # In the order they were sent (the worker's dict order): references come back in place.
            resolved = {name: step.tensors.get(name) or last[name] for name in tensors}  # type: ignore[union-attr]
            step.__dict__["tensors"] = resolved
        return step, not any(name in unplain for name in refs)


__all__ = [
    "KINDS",
    "MAX_FRAME_BYTES",
    "Frame",
    "FrameDecoder",
    "WireError",
    "parse",
]
