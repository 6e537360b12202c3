"""Hypothesis strategies and settings profiles for tests/differential/test_fuzz.py.

Two families of scripts:

* ``valid_scripts()``: Python that plain PyTorch runs as written, over the language
  tcopy supports (creation ops, the copy family, views, in-place ops, arithmetic,
  ``torch.no_grad()`` blocks, ``for`` loops, backward, grad zeroing and aliasing,
  ``requires_grad_``, ``.data``/``.requires_grad``/``.grad`` assignment, ``del``, ``print``).
  A script may still fail at run time (an in-place op on a leaf, a second backward
  through a freed graph): the differential property covers failing scripts too.
  A small model of each name's shape keeps most scripts running to the end.
* ``python_like_text()`` and ``mutated_scripts()``: token soup and damaged valid
  scripts for the command-line robustness property.

The settings profiles are registered when this module is imported; tests/conftest.py
imports it so that ``pytest --hypothesis-profile=long`` finds the profile.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

# --- settings profiles -------------------------------------------------------------------

LONG_PROFILE = "long"
LONG_EXAMPLES = 3000
_QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large]

settings.register_profile(
    LONG_PROFILE, deadline=None, max_examples=LONG_EXAMPLES, suppress_health_check=_QUIET, print_blob=True
)


def fuzz_settings(default_examples: int) -> settings:
    """Settings for one fuzz test.

    Under the ``long`` profile (``--hypothesis-profile=long``, possibly with a
    ``--hypothesis-verbosity``) the profile applies as it is. Otherwise the run is
    deterministic and bounded: ``default_examples`` examples, derandomized, no example
    database, no deadline (the first run of a script pays for torch's warm-up).
    """
    if settings.get_current_profile_name().startswith(LONG_PROFILE):
        return settings(settings.default)
    return settings(
        settings.default,
        max_examples=default_examples,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=_QUIET,
        print_blob=True,
    )


# --- valid scripts ---------------------------------------------------------------------------

NAMES = "abcdefg"
FLOATS = ("1.0", "2.0", "-1.0", "0.5", "-0.5", "1.5", "3.0", "-2.0")
SHAPES: tuple[tuple[int, ...], ...] = ((3,), (2,), (4,), (2, 3), (3, 2), (2, 2))
REQUIRES_GRAD = ("", ", requires_grad=True", ", requires_grad=True", ", requires_grad=False")
Shape = tuple[int, ...]
Draw = st.DrawFn


@dataclass
class _Model:
    """What the script has bound so far, as a guide for picking operands.

    It only steers generation toward scripts that run further (backward on tensors
    that require grad, in-place updates of leaves inside ``no_grad``); nothing checks
    it, and where it is wrong the script just fails earlier, which is still a valid case.
    """

    shapes: dict[str, Shape] = field(default_factory=dict)
    grad: set[str] = field(default_factory=set)  # probably requires grad
    leaves: set[str] = field(default_factory=set)  # probably a leaf that requires grad
    no_grad: bool = False
    depth: int = 0  # blocks (with/for) around the statement being generated

    def names(self, pred: Callable[[Shape], bool] = lambda s: True) -> list[str]:
        return sorted(n for n, s in self.shapes.items() if pred(s))

    def bind(self, name: str, shape: Shape, grad: bool, leaf: bool = False) -> None:
        self.shapes[name] = shape
        self.grad.discard(name)
        self.leaves.discard(name)
        if grad and not self.no_grad:
            self.grad.add(name)
            if leaf:
                self.leaves.add(name)

    def forget(self, name: str) -> None:
        del self.shapes[name]
        self.grad.discard(name)
        self.leaves.discard(name)


def _pick(draw: Draw, names: list[str]) -> str:
    return draw(st.sampled_from(names))


def _prefer(draw: Draw, preferred: list[str], others: list[str]) -> str:
    """Usually one of ``preferred`` (when there are any), else any of ``others``."""
    if preferred and (not others or draw(st.integers(0, 3)) > 0):
        return _pick(draw, preferred)
    return _pick(draw, others or preferred)


def _const(draw: Draw) -> str:
    return draw(st.sampled_from(FLOATS))


def _target(draw: Draw, m: _Model) -> str:
    """A new name, or sometimes an existing one (rebinding)."""
    free = [n for n in NAMES if n not in m.shapes]
    if free and (not m.shapes or draw(st.integers(0, 3)) > 0):
        return free[0]
    return _pick(draw, m.names())


def _literal(draw: Draw, shape: Shape) -> str:
    if len(shape) == 1:
        return "[" + ", ".join(_const(draw) for _ in range(shape[0])) + "]"
    return "[" + ", ".join(_literal(draw, shape[1:]) for _ in range(shape[0])) + "]"


def _dims(shape: Shape) -> str:
    return ", ".join(str(n) for n in shape)


def _create(draw: Draw, m: _Model) -> list[str]:
    shape = draw(st.sampled_from(SHAPES))
    rg = draw(st.sampled_from(REQUIRES_GRAD))
    kind = draw(st.sampled_from(["tensor", "ones", "randn", "arange", "zeros", "arange_int"]))
    lines: list[str] = []
    if kind == "tensor":
        expr = f"torch.tensor({_literal(draw, shape)}{rg})"
    elif kind in ("ones", "zeros"):
        expr = f"torch.{kind}({_dims(shape)}{rg})"
    elif kind == "arange":
        shape = (shape[0],)
        expr = f"torch.arange({shape[0]}.0{rg})"
    elif kind == "arange_int":  # int64: requires_grad=True and float in-place ops fail on it
        shape = (shape[0],)
        expr = f"torch.arange({shape[0]}{rg})"
    else:
        lines.append(f"torch.manual_seed({draw(st.integers(0, 9))})")
        expr = f"torch.randn({_dims(shape)}{rg})"
    target = _target(draw, m)
    m.bind(target, shape, grad="True" in rg, leaf=True)
    return [*lines, f"{target} = {expr}"]


COPY_KINDS = [
    "clone",
    "detach",
    "data",
    "deepcopy",
    "new_tensor",
    "torch_tensor",
    "empty_like_copy",
    "two_step",
    "into",
]


def _copy(draw: Draw, m: _Model) -> list[str]:
    x = _pick(draw, m.names())
    shape = m.shapes[x]
    kind = draw(st.sampled_from(COPY_KINDS))
    grad = x in m.grad
    if kind == "into":
        z = _prefer(draw, [n for n in m.names(lambda s: s == shape) if n not in m.leaves or m.no_grad], [x])
        if grad:
            m.bind(z, shape, grad=True)
        return [f"{z}.copy_({x})"]
    target = _target(draw, m)
    if kind == "two_step" and target == x:  # torch.empty_like(x) would replace x's values
        kind = "empty_like_copy"
    leaf = False
    if kind == "clone":
        expr = f"{x}.clone()"
    elif kind == "detach":
        expr, grad = f"{x}.detach()", False
    elif kind == "data":
        expr, grad = f"{x}.data", False
    elif kind == "deepcopy":
        expr, leaf = f"copy.deepcopy({x})", True
    elif kind == "new_tensor":
        expr, grad = f"{_pick(draw, m.names())}.new_tensor({x})", False
    elif kind == "torch_tensor":
        rg = draw(st.sampled_from(REQUIRES_GRAD))
        expr, grad, leaf = f"torch.tensor({x}{rg})", "True" in rg, True
    elif kind == "empty_like_copy":
        expr = f"torch.empty_like({x}).copy_({x})"
    else:
        m.bind(target, shape, grad)
        return [f"{target} = torch.empty_like({x})", f"{target}.copy_({x})"]
    m.bind(target, shape, grad, leaf)
    return [f"{target} = {expr}"]


def _view(draw: Draw, m: _Model) -> list[str]:
    candidates = m.names(lambda s: len(s) >= 1)
    if not candidates:
        return _create(draw, m)
    x = _pick(draw, candidates)
    shape = m.shapes[x]
    options = ["flat"]
    if shape[0] >= 2:
        options.append("tail")
    if len(shape) == 2:
        options += ["t", "row"]
    kind = draw(st.sampled_from(options))
    if kind == "tail":
        expr, new = f"{x}[1:]", (shape[0] - 1, *shape[1:])
    elif kind == "t":
        expr, new = f"{x}.t()", (shape[1], shape[0])
    elif kind == "row":
        expr, new = f"{x}[0]", shape[1:]
    else:
        n = 1
        for d in shape:
            n *= d
        expr, new = f"{x}.view(-1)", (n,)
    target = _target(draw, m)
    m.bind(target, new, x in m.grad)
    return [f"{target} = {expr}"]


def _partner(draw: Draw, m: _Model, shape: Shape) -> str:
    """A name of the same shape or a 0-d tensor, else a constant."""
    names = m.names(lambda s: s == shape or s == ())
    if names and draw(st.booleans()):
        return _pick(draw, names)
    return _const(draw)


INPLACE_KINDS = ["add_", "mul_", "iadd", "imul", "zero_", "data_add_", "detach_mul_", "requires_grad_", "retain_grad"]


def _inplace(draw: Draw, m: _Model) -> list[str]:
    # Outside no_grad, in-place ops on leaves that require grad fail: prefer other names.
    # Inside no_grad, prefer exactly those (the optimizer-step pattern).
    all_names = m.names()
    leaves = [n for n in all_names if n in m.leaves]
    others = [n for n in all_names if n not in m.leaves]
    x = _prefer(draw, leaves, others) if m.no_grad else _prefer(draw, others, leaves)
    shape = m.shapes[x]
    kind = draw(st.sampled_from(INPLACE_KINDS))
    if kind in ("add_", "mul_", "iadd", "imul"):
        y = _partner(draw, m, shape)
        if y in m.grad and not m.no_grad:
            m.grad.add(x)
        if kind in ("add_", "mul_"):
            return [f"{x}.{kind}({y})"]
        return [f"{x} {'+' if kind == 'iadd' else '*'}= {y}"]
    if kind == "zero_":
        return [f"{x}.zero_()"]
    if kind == "data_add_":
        return [f"{x}.data.add_({_const(draw)})"]
    if kind == "detach_mul_":
        return [f"{x}.detach().mul_({_const(draw)})"]
    if kind == "requires_grad_":
        arg = draw(st.sampled_from(["", "True", "False"]))
        if arg == "False":
            m.grad.discard(x)
            m.leaves.discard(x)
        else:
            if x not in m.grad:  # a tensor that doesn't require grad is a leaf
                m.leaves.add(x)
            m.grad.add(x)
        return [f"{x}.requires_grad_({arg})"]
    return [f"{x}.retain_grad()"]


def _arith(draw: Draw, m: _Model) -> list[str]:
    x = _prefer(draw, sorted(m.grad), m.names())
    shape = m.shapes[x]
    grad = x in m.grad
    kind = draw(st.sampled_from(["binop", "const", "unary", "sum", "mean", "matmul"]))
    new: Shape = shape
    if kind == "binop":
        op = draw(st.sampled_from(["*", "+", "-"]))
        y = _partner(draw, m, shape)
        grad = grad or y in m.grad
        expr = f"{x} {op} {y}" if draw(st.booleans()) else f"{y} {op} {x}"
    elif kind == "const":
        op = draw(st.sampled_from(["*", "+", "/", "**"]))
        c = "2" if op == "**" else _const(draw)
        expr = f"{x} {op} {c}"
    elif kind == "unary":
        fn = draw(st.sampled_from(["sin", "exp", "tanh", "relu", "sigmoid", "neg"]))
        expr = f"{x}.{fn}()"
        if draw(st.booleans()):
            expr = f"({x} * {_const(draw)}).{fn}()"
    elif kind in ("sum", "mean"):
        expr, new = f"{x}.{kind}()", ()
    else:
        ok = m.names(lambda s: len(s) == 2 and len(shape) == 2 and s[0] == shape[1])
        if not ok:
            expr = f"{x}.pow(2)"
        else:
            y = _pick(draw, ok)
            grad = grad or y in m.grad
            expr, new = f"{x} @ {y}", (shape[0], m.shapes[y][1])
    target = _target(draw, m)
    m.bind(target, new, grad)
    return [f"{target} = {expr}"]


def _backward(draw: Draw, m: _Model) -> list[str]:
    if not m.grad and draw(st.integers(0, 3)) > 0:  # nothing to differentiate yet: make something
        x = _pick(draw, m.names())
        m.grad.add(x)
        m.leaves.add(x)
        return [f"{x}.requires_grad_()"]
    x = _prefer(draw, sorted(m.grad), m.names())
    shape = m.shapes[x]
    form = draw(st.sampled_from(["x", "x*y", "x*c", "f(x)*y"]))
    if form == "x":
        expr = x
    elif form == "x*c":
        expr = f"{x} * {_const(draw)}"
    else:
        y = _partner(draw, m, shape)
        expr = f"{x} * {y}" if form == "x*y" else f"{x}.sin() * {y}"
    retain = draw(st.sampled_from(["", "retain_graph=True"]))
    return [f"({expr}).sum().backward({retain})"]


def _zero_grad(draw: Draw, m: _Model) -> list[str]:
    x = _prefer(draw, sorted(m.leaves), m.names())
    if draw(st.booleans()):
        return [f"{x}.grad = None"]
    return [f"if {x}.grad is not None:", f"    {x}.grad.zero_()"]


def _grad_alias(draw: Draw, m: _Model) -> list[str]:
    """Bind a name to a gradient (it shares memory with ``x.grad``), or to zeros if there is none."""
    x = _prefer(draw, sorted(m.leaves), m.names())
    target = _target(draw, m)
    m.bind(target, m.shapes[x], grad=False)
    how = draw(st.sampled_from(["", ".clone()"]))
    lines = [f"if {x}.grad is not None:", f"    {target} = {x}.grad{how}"]
    if draw(st.integers(0, 3)) > 0:
        lines += ["else:", f"    {target} = torch.zeros_like({x})"]
    return lines


def _set_attr(draw: Draw, m: _Model) -> list[str]:
    """Assign ``.data``, ``.requires_grad`` or ``.grad``; or ``detach_()``."""
    x = _pick(draw, m.names())
    shape = m.shapes[x]
    kind = draw(st.sampled_from(["data", "requires_grad", "grad", "detach_"]))
    if kind == "data":
        same = m.names(lambda s: s == shape)
        value = _pick(draw, same) if draw(st.booleans()) else f"torch.zeros({_dims(shape)})"
        return [f"{x}.data = {value}"]
    if kind == "requires_grad":
        flag = draw(st.sampled_from(["True", "False"]))
        if flag == "True":
            m.grad.add(x)
            m.leaves.add(x)
        else:
            m.grad.discard(x)
            m.leaves.discard(x)
        return [f"{x}.requires_grad = {flag}"]
    if kind == "grad":
        return [f"{x}.grad = torch.ones_like({x})"]
    m.grad.discard(x)
    m.leaves.discard(x)
    return [f"{x}.detach_()"]


def _loop(draw: Draw, m: _Model) -> list[str]:
    """``for i in range(n):`` around a few statements (each runs as a step per iteration)."""
    n = draw(st.integers(1, 3))
    body: list[str] = []
    m.depth += 1
    try:
        for _ in range(draw(st.integers(1, 3))):
            body += _statement(draw, m)
    finally:
        m.depth -= 1
    return [f"for i in range({n}):", *("    " + line for line in body)]


def _print(draw: Draw, m: _Model) -> list[str]:
    x = _pick(draw, m.names())
    what = draw(
        st.sampled_from(
            [
                x,
                f"{x}.grad",
                f"{x}.requires_grad, {x}.is_leaf, {x}._version",
                f"{x}.grad_fn",
                f"{x}.shape, {x}.dtype",
                f'f"{{{x}.sum().item():.4f}}"',
            ]
        )
    )
    return [f"print({what})"]


def _delete(draw: Draw, m: _Model) -> list[str]:
    if len(m.shapes) < 2:
        return _create(draw, m)
    x = _pick(draw, m.names())
    m.forget(x)
    return [f"del {x}"]


def _no_grad(draw: Draw, m: _Model) -> list[str]:
    body: list[str] = []
    was, m.no_grad = m.no_grad, True
    m.depth += 1
    try:
        for _ in range(draw(st.integers(1, 3))):
            body += _statement(draw, m)
    finally:
        m.no_grad = was
        m.depth -= 1
    return ["with torch.no_grad():", *("    " + line for line in body)]


_Maker = Callable[[Draw, _Model], list[str]]
# Weighted by repetition; the first entries are what shrinking moves toward.
_WITH_NAMES: list[_Maker] = [
    _arith,
    _copy,
    _backward,
    _inplace,
    _view,
    _arith,
    _backward,
    _copy,
    _zero_grad,
    _print,
    _no_grad,
    _delete,
    _grad_alias,
    _set_attr,
    _loop,
]
_IN_NO_GRAD: frozenset[_Maker] = frozenset({_create, _copy, _view, _inplace, _arith, _print, _set_attr, _loop})
_BLOCKS: frozenset[_Maker] = frozenset({_no_grad, _loop})


def _statement(draw: Draw, m: _Model) -> list[str]:
    choices: list[_Maker] = [_create]
    if m.shapes:
        choices += _WITH_NAMES
    if m.no_grad:
        choices = [c for c in choices if c in _IN_NO_GRAD]
    if m.depth >= 2:
        choices = [c for c in choices if c not in _BLOCKS]
    make = draw(st.sampled_from(choices))
    return make(draw, m)


@st.composite
def valid_scripts(draw: st.DrawFn, max_statements: int = 16) -> str:
    """A script in tcopy's supported language that plain Python can run as written."""
    m = _Model()
    lines = ["import torch", "import copy"]
    for _ in range(draw(st.integers(1, max_statements))):
        lines += _statement(draw, m)
    return "\n".join(lines) + "\n"


# --- text for the command-line robustness property --------------------------------------------

_IDENTS = "a b x y t torch copy math np print len range list dict str int float grad data self".split()
_ATTRS = """
    torch. .ones( .zeros( .tensor( .randn( .arange( .empty_like( .clone() .detach() .data .grad
    .grad_fn .backward() .sum() .add_( .mul_( .zero_() .copy_( .view(-1) .t() .requires_grad_()
    .retain_grad() .new_tensor( .item() .tolist() .numpy() .shape .dtype .is_leaf ._version ._base
    .T .mT .untyped_storage() .data_ptr() .storage_offset() .next_functions .name() .to( .cuda()
    .__class__ .__dict__ .__subclasses__() .__globals__ .__mro__ .__init__ .__reduce_ex__(2) ._saved_self
    .format( .apply_( .register_hook( .load( .save( .utils .backends .set_default_device( .manual_seed(
    .no_grad() .inference_mode() .set_grad_enabled( .linalg.norm( .autograd.grad( copy.deepcopy(
""".split()
_OPS = "= == != += -= *= /= @= **= + - * / // % ** @ < > <= >= << >> & | ^ ~ : ; , . -> := ... !".split()
_KEYWORDS = """
    for in if elif else with as def class lambda import from while return yield try except finally raise
    del pass break continue global nonlocal async await and or not is None True False assert match case
""".split()
_NUMBERS = "0 1 2 -1 2.5 1e308 1e-400 10**9 2**64 0x7f 1j 3. .5 1_000 100000000 -0.0".split()
_STRINGS = ["'s'", '"%s"', "f'{x}'", "f'{x!r:>10}'", "'a' * 10**9", "b'x'", '"""', "'", "r'\\x00'", "'\\N{DASH}'"]
_MISC = [
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    "requires_grad=True",
    "retain_graph=True",
    "dtype=torch.float64",
    "device='cuda'",
    "__import__('os')",
    "__builtins__",
    "__name__",
    "getattr(",
    "eval(",
    "open(",
    "#",
    "\\",
    "@property",
    "*args",
    "**kw",
    "\x00",
    "\ufeff",
    "é",
    "\r",
]
_SEPARATORS = ["", " ", " ", "\n", "\n", "\n    ", "\n        ", "\t", "; "]

TOKENS = st.sampled_from([*_IDENTS, *_ATTRS, *_OPS, *_KEYWORDS, *_NUMBERS, *_STRINGS, *_MISC])


@st.composite
def python_like_text(draw: st.DrawFn, max_tokens: int = 40) -> str:
    """Token soup: identifiers, torch calls, operators, brackets, keywords, dunders, numbers, indentation."""
    parts = draw(st.lists(st.tuples(TOKENS, st.sampled_from(_SEPARATORS)), max_size=max_tokens))
    return "".join(tok + sep for tok, sep in parts)


@st.composite
def mutated_scripts(draw: st.DrawFn) -> str:
    """A valid script damaged by a few edits: inserted tokens, cut characters, repeated or dropped lines."""
    lines = draw(valid_scripts(max_statements=8)).splitlines()
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["insert", "cut", "repeat", "drop", "indent"]))
        i = draw(st.integers(0, max(len(lines) - 1, 0)))
        if not lines:
            lines = [""]
        line = lines[i]
        if kind == "insert":
            pos = draw(st.integers(0, len(line)))
            lines[i] = line[:pos] + draw(TOKENS) + line[pos:]
        elif kind == "cut" and line:
            a = draw(st.integers(0, len(line) - 1))
            b = draw(st.integers(a, len(line)))
            lines[i] = line[:a] + line[b:]
        elif kind == "repeat":
            lines.insert(i, line)
        elif kind == "drop" and len(lines) > 1:
            del lines[i]
        elif kind == "indent":
            lines[i] = "    " + line
    return "\n".join(lines) + "\n"
