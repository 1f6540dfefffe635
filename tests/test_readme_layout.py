"""README's Layout section matches the code: every folder it names exists, and every package is named."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src" / "corral"


def _layout() -> list[tuple[int, str, str]]:
    """(indent, first column, description) for each line of the Layout block."""
    text = (REPO / "README.md").read_text()
    block = re.search(r"^## Layout\n\n```\n(.*?)```", text, re.DOTALL | re.MULTILINE)
    assert block is not None, "README.md lost its Layout section"
    rows = []
    for line in block.group(1).splitlines():
        name, _, description = line.strip().partition("  ")
        rows.append((len(line) - len(line.lstrip()), name.strip(), description.strip()))
    return rows


def _listed() -> set[Path]:
    """The paths the block names, resolved through its indentation (`  x/` under `src/corral/`)."""
    parents: list[tuple[int, Path]] = []
    found: set[Path] = set()
    for indent, name, _ in _layout():
        while parents and parents[-1][0] >= indent:
            parents.pop()
        base = parents[-1][1] if parents else REPO
        for part in (p.strip() for p in name.split(",")):
            path = base / part.rstrip("/")
            found.add(path)
            if part.endswith("/"):
                parents.append((indent, path))
    return found


def _packages(folder: Path) -> set[Path]:
    return {p for p in folder.iterdir() if p.is_dir() and (p / "__init__.py").exists()}


def test_every_path_the_layout_names_exists() -> None:
    missing = sorted(str(p.relative_to(REPO)) for p in _listed() if not p.exists())
    assert missing == []


def test_every_package_of_corral_and_of_its_core_is_in_the_layout() -> None:
    unlisted = (_packages(SRC) | _packages(SRC / "orchestration")) - _listed()
    assert sorted(str(p.relative_to(REPO)) for p in unlisted) == []


def test_the_runtime_line_names_every_backend() -> None:
    [runtime] = [description for _, name, description in _layout() if name == "runtime/"]
    words = {"_inprocess.py": "in-process", "_tmux.py": "tmux", "_ray.py": "Ray"}
    backends = {p.name for p in (SRC / "runtime").glob("_*.py")} - {"__init__.py", "_base.py", "_runtimes.py"}
    assert backends == set(words)  # a new backend: name it in README and here
    assert all(words[b] in runtime for b in backends), runtime
