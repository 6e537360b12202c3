"""The one-way flow: script → trace → explain → render → cli, checked on the imports.

Imports inside functions count too: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "tcopy_cli"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """Every module ``path`` imports (absolute names)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = _module_name(path).split(".")
                if path.name != "__init__.py":
                    base = base[:-1]
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def _modules(layer: str) -> list[Path]:
    return sorted((PACKAGE / layer).rglob("*.py"))


def _uses(imported: set[str], prefix: str) -> bool:
    return any(name == prefix or name.startswith(prefix + ".") for name in imported)


@pytest.mark.parametrize(
    ("layer", "forbidden"),
    [
        ("trace", ["tcopy_cli.explain", "tcopy_cli.render", "tcopy_cli.pipeline", "tcopy_cli.cli", "tcopy_cli.repl"]),
        ("explain", ["torch", "numpy", "tcopy_cli.script", "tcopy_cli.render", "tcopy_cli.pipeline", "tcopy_cli.cli"]),
        ("render", ["torch", "numpy", "tcopy_cli.explain", "tcopy_cli.pipeline", "tcopy_cli.cli"]),
    ],
)
def test_layer_imports_only_what_comes_before_it(layer: str, forbidden: list[str]) -> None:
    for path in _modules(layer):
        imported = imports_of(path)
        for prefix in forbidden:
            assert not _uses(imported, prefix), f"{path.relative_to(PACKAGE)} imports {prefix}"


def test_explain_reads_only_plain_records_from_trace() -> None:
    allowed = {
        "tcopy_cli.trace.records",
        "tcopy_cli.trace.scriptnames",
        "tcopy_cli.trace.values",
        "tcopy_cli.trace.layout",
    }
    for path in _modules("explain"):
        for name in imports_of(path):
            if _uses({name}, "tcopy_cli.trace"):
                assert any(_uses({name}, a) for a in allowed), f"{path.relative_to(PACKAGE)} imports {name}"


def test_records_import_no_torch_and_no_other_trace_module() -> None:
    imported = imports_of(PACKAGE / "trace" / "records.py")
    assert not _uses(imported, "torch")
    assert {n for n in imported if _uses({n}, "tcopy_cli")} <= {
        "tcopy_cli.trace.layout",
        "tcopy_cli.trace.layout.byte_span",
    }
    assert not _uses(imports_of(PACKAGE / "trace" / "layout.py"), "tcopy_cli")
