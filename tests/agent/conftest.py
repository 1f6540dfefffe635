"""Fixtures for the agent-loop tests (helpers live in `helpers.py`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import Harness


@pytest.fixture
def harness(tmp_path: Path) -> Harness:
    """Builds sessions and agents in a temp dir."""
    return Harness(tmp_path)
