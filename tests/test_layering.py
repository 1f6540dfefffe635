"""Meta-tests for conventions a reviewer would otherwise police: layering and public exports.

Layers, lowest first: base (`errors`, `_paths`, `_units`, `_process`) ← `llm` and `settings` ← `session` ← `agent` (the substrate)
← `orchestration`, `runtime` (the core) ← `tui`, `cli`, `_cli`, `lead` (the Python API and the composition root),
`_mcp` (front ends) ← the package's `__init__` (a façade that loads the Python API on first use). A module may import only from
its own layer or below; `sqlite3` belongs to the store (`orchestration/store/`) and the features' repositories alone.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "corral"

RANK = {
    "errors": 0,
    "_paths": 0,
    "_units": 0,
    "_process": 0,
    "settings": 1,
    "llm": 1,
    "session": 2,
    "agent": 3,
    "orchestration": 4,
    "runtime": 4,
    "tui": 5,
    "cli": 5,
    "_cli": 5,
    "_demo": 5,
    "lead": 5,
    "_mcp": 5,
    "__init__": 6,
}


def _layer_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    package = ".".join(("corral", *path.relative_to(SRC).with_suffix("").parts))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                if path.name != "__init__.py":
                    base = base[:-1]
                base = base[: len(base) - (node.level - 1)]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            found.append((node.lineno, name))
    return found


def _source_files() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


@pytest.mark.parametrize("path", _source_files(), ids=lambda p: str(p.relative_to(SRC)))
def test_no_module_imports_a_higher_layer(path: Path) -> None:
    own = _layer_of(".".join(("corral", *path.relative_to(SRC).with_suffix("").parts)))
    for lineno, name in _imports(path):
        if name.startswith("corral."):
            target = _layer_of(name)
            assert RANK.get(target, 0) <= RANK.get(own, 0), (
                f"{path.name}:{lineno} ({own}) imports {name} ({target})"
            )
        if RANK.get(own, 0) < 5:
            assert name.split(".")[0] not in ("typer", "textual"), f"{path.name}:{lineno} imports {name}"


def _may_use_sqlite(path: Path) -> bool:
    """The database package and each feature's repository (its own SQL over the shared database)."""
    rel = path.relative_to(SRC)
    return rel.parts[:2] == ("orchestration", "store") or path.name == "_repository.py"


def test_sqlite_only_in_the_store() -> None:
    offenders = [
        f"{path.relative_to(SRC)}:{lineno}"
        for path in _source_files()
        for lineno, name in _imports(path)
        if name == "sqlite3" and not _may_use_sqlite(path)
    ]
    assert offenders == []


@pytest.mark.parametrize(
    "package", ["corral.llm", "corral.session", "corral.agent", "corral.agent.tools", "corral.lead"]
)
def test_all_matches_public_names(package: str) -> None:
    module = importlib.import_module(package)
    exported = list(module.__all__)  # ruff's RUF022 keeps it sorted
    for name in exported:
        assert hasattr(module, name), f"{package}.__all__ names missing {name}"
    public = {
        name
        for name, value in vars(module).items()
        if not name.startswith("_") and getattr(value, "__module__", "").startswith(package + ".")
    }
    assert public <= set(exported), f"{package} exposes {sorted(public - set(exported))} without __all__"
