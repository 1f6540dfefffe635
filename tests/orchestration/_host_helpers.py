"""Shared setup for controller, delivery and host tests: a lead on a scripted model plus a host."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from corral.agent import AgentSession
from corral.lead._host import ComposedHost
from corral.llm import ModelRegistry
from corral.orchestration import Caller, Repositories, load_roster
from corral.session import SessionManager
from corral.settings import Settings

WAIT = 20.0
STARTUP_WAIT = 90.0
"""For a wait that includes a Python process's start-up (a host driver, a `corral worker`): corral's
imports cost about a second of CPU, which on a loaded 2-core machine takes tens of seconds."""


@dataclass
class Team:
    host: ComposedHost
    lead: AgentSession
    caller: Caller
    tmp: Path
    sessions_root: Path

    @property
    def controller(self) -> Any:
        return self.host.controller

    async def quiet(self) -> None:
        await asyncio.wait_for(self.host.wait_until_quiet(self.caller.session_id), WAIT)

    def lead_entries(self, custom_type: str) -> list[dict[str, Any]]:
        path = self.lead.session.path
        assert path is not None
        out: list[dict[str, Any]] = []
        if not path.exists():
            return out
        for line in path.read_text().splitlines():
            data = json.loads(line)
            if data.get("type") == "custom_message" and data.get("customType") == custom_type:
                out.append(data)
        return out


def write_script(tmp: Path, name: str, script: dict[str, Any]) -> None:
    scripts = tmp / "scripts"
    scripts.mkdir(exist_ok=True)
    (scripts / f"{name}.yaml").write_text(yaml.safe_dump(script))


def prepare_env(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CORRAL_HOME", str(tmp / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp / "config"))
    monkeypatch.setenv("CORRAL_SCRIPTS", str(tmp / "scripts"))
    (tmp / "work").mkdir(exist_ok=True)


def make_lead(
    tmp: Path, script: str, *, sessions_root: Path, session_path: Path | None = None
) -> AgentSession:
    registry = ModelRegistry(Settings(), cwd=tmp / "work")
    model = registry.create_model(registry.resolve(f"scripted/{script}"), cwd=tmp / "work")
    session = (
        SessionManager.open(session_path)
        if session_path is not None
        else SessionManager.create(tmp / "work", sessions_root=sessions_root)
    )
    return AgentSession(session=session, model=model, thinking_level="off", tools=[], cwd=tmp / "work")


@contextlib.asynccontextmanager
async def team(
    tmp: Path,
    script: str,
    *,
    session_path: Path | None = None,
    surfaces: tuple[str, ...] = (),
    settings: Settings | None = None,
    tmux_socket: Path | None = None,
    registry: ModelRegistry | None = None,
) -> AsyncIterator[Team]:
    """A host on the store under `tmp` with a scripted lead attached (tmux on `tmux_socket`; the
    host's models from `registry`, default: the built-in ones)."""
    sessions_root = tmp / "sessions"
    store = Repositories.open(tmp / "home" / "corral.db")
    registry = registry or ModelRegistry(Settings(), cwd=tmp / "work")
    host = ComposedHost(
        repositories=store,
        registry=registry,
        settings=settings,
        sessions_root=sessions_root,
        roster_loader=lambda cwd: load_roster(cwd, user_dir=tmp / "config" / "agents", trust=False),
        tmux_socket=tmux_socket,
    )
    errors: list[BaseException] = []
    host.on_background_error = errors.append
    lead = make_lead(tmp, script, sessions_root=sessions_root, session_path=session_path)
    caller = await host.attach_lead(lead, surfaces=surfaces)
    try:
        yield Team(host, lead, caller, tmp, sessions_root)
    finally:
        await host.aclose()
        lead.session.close()
    assert not errors, errors


AsyncFn = Callable[[], Awaitable[None]]
