"""A private data root, config and scripts for Python-API tests; agents run on `scripted/team`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

WAIT = 20.0


@dataclass
class ApiEnv:
    root: Path
    work: Path
    home: Path

    def script(
        self, agents: dict[str, list[dict[str, Any]]], *, steps: list[dict[str, Any]] | None = None
    ) -> None:
        """Write `scripted/team`: the lead's `steps` (when it has the model) and the agents' steps."""
        script = {"steps": steps or [{"text": "lead"}], "on_exhausted": "repeat_last", "agents": agents}
        (self.root / "scripts" / "team.yaml").write_text(yaml.safe_dump(script))


@pytest.fixture
def api_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ApiEnv:
    for folder in ("work", "scripts", "config/corral"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "config" / "corral" / "settings.toml").write_text('default_model = "scripted/team"\n')
    monkeypatch.setenv("CORRAL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("CORRAL_SCRIPTS", str(tmp_path / "scripts"))
    env = ApiEnv(tmp_path, tmp_path / "work", tmp_path / "home")
    env.script({"*": [{"text": "agent result"}]})
    return env
