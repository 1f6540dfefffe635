"""Fixtures shared by the orchestration slices: a private corral home, and a real store in it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from corral.orchestration import Repositories
from tests.orchestration._host_helpers import prepare_env


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`tmp_path` as the test's world: CORRAL_HOME, XDG_CONFIG_HOME and CORRAL_SCRIPTS point inside it."""
    prepare_env(tmp_path, monkeypatch)
    return tmp_path


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """Where the test's store lives (`home/corral.db` under `tmp_path`)."""
    return tmp_path / "home" / "corral.db"


@pytest.fixture
def store(db_path: Path) -> Iterator[Repositories]:
    """A real store at `db_path`, closed after the test."""
    with Repositories.open(db_path) as opened:
        yield opened
