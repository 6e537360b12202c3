"""What the confined worker refused: which permission the script lacked, and the flag that grants it.

The kernel (Landlock, seccomp) refuses a file read outside what the run may read, any file write,
starting a program and any network connection; Python raises ``PermissionError`` (or
``OSError`` with EPERM/EACCES). A local module the run may not read looks missing to ``import``.
"""

from __future__ import annotations

import re

from tcopy_cli.explain.errors.catalogue import entry
from tcopy_cli.explain.errors.context import ErrorContext

_WRITING = re.compile(r"""open\([^)]*['"][wax+]|\.write_|\.save\(|mkdir|makedirs|remove\(|unlink|rename|touch\(""")
_RUNNING = re.compile(r"subprocess|os\.system|os\.popen|os\.exec|os\.spawn|Popen")
_NETWORK = re.compile(r"socket|urlopen|requests\.|http|download|hub\.load|from_pretrained")

TRUST = "If you trust the script (your own, or one you would run with python), --trust runs it unconfined."


@entry("permission.denied", r"\[Errno (?P<errno>1|13)\] (?P<why>[^:]+)(?::\s*'(?P<path>.*)')?", "PermissionError")
def denied(ctx: ErrorContext, m: re.Match[str]) -> str:
    statement = ctx.step.source if ctx.step is not None else ""
    path = m["path"]
    if _RUNNING.search(statement):
        what = "start other programs"
    elif _NETWORK.search(statement):
        what = "use the network"
    elif path is not None and _WRITING.search(statement):
        what = f"write files (here '{path}'): no file can be written, created or removed anywhere"
    elif path is not None:
        return (
            f"The script ran confined, and the kernel refused to let it read '{path}': it may read Python's "
            f"installation and only the files you allow. --allow-read lets it read the script's own directory, "
            f"--allow-read=PATH a file or directory of your choice (the header says which apply). {TRUST}"
        )
    else:
        what = "make this system call (the kernel refused it with EPERM)"
    return f"The script ran confined, and the kernel refused to let it {what}. {TRUST}"


@entry("permission.module", r"No module named '(?P<name>[^'.]+)", "ModuleNotFoundError")
def missing_module(ctx: ErrorContext, m: re.Match[str]) -> str:
    name = m["name"]
    return (
        f"Python found no module '{name}'. If {name}.py (or a package {name}/) sits beside the script, the confined "
        f"run can't read it: --allow-read lets the script read its own directory. Otherwise install it into the "
        f"Python that runs tcopy (pip install {name})."
    )


@entry(
    "permission.inside_torch",
    r"PermissionError: \[Errno (?P<errno>1|13)\]|open file failed with strerror: Permission denied",
    "RuntimeError",
    "InductorError",
    "InternalTorchDynamoError",
    "BackendCompilerFailed",
)
def denied_inside_torch(ctx: ErrorContext, m: re.Match[str]) -> str:
    statement = ctx.step.source if ctx.step is not None else ""
    if "strerror" in m[0] or _WRITING.search(statement):
        what = "write the file (no file can be written, created or removed anywhere)"
    elif ctx.error.type in ("InductorError", "InternalTorchDynamoError", "BackendCompilerFailed"):
        what = "do what torch.compile does to build a kernel (write its cache, start a C++ compiler)"
    else:
        what = "make a system call torch made for it"
    return f"The script ran confined, and the kernel refused to let torch {what}. {TRUST}"
