"""Fixtures for the session tests: a private sessions root and copies of the golden files."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from ._helpers import FIXTURES


@pytest.fixture
def sessions_root(tmp_path: Path) -> Path:
    return tmp_path / "sessions"


@pytest.fixture
def fixture_copy(tmp_path: Path) -> Callable[[str], Path]:
    """Copy a fixture file into a private tmp directory and return the copy's path."""

    def copy(name: str) -> Path:
        target = tmp_path / "copies" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(FIXTURES / name, target)
        target.chmod(0o600)
        return target

    return copy
