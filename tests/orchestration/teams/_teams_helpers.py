"""A scripted lead with the teams surface, over a real store and host."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from corral.agent import AgentSession
from corral.lead._host import ComposedHost
from corral.llm import ModelRegistry
from corral.orchestration import Caller, Repositories, load_roster
from corral.settings import Settings
from tests.orchestration._host_helpers import make_lead, prepare_env, write_script

WAIT = 30.0

__all__ = ["WAIT", "TeamsEnv", "prepare_env", "session_entries", "teams_env", "write_script"]


@dataclass
class TeamsEnv:
    host: ComposedHost
    lead: AgentSession
    caller: Caller
    tmp: Path

    @property
    def teams(self) -> Any:
        return self.host.teams

    async def quiet(self) -> None:
        await asyncio.wait_for(self.host.wait_until_quiet(self.caller.session_id), WAIT)

    def lead_custom(self, custom_type: str) -> list[dict[str, Any]]:
        path = self.lead.session.path
        if path is None or not path.exists():
            return []
        return [
            e
            for e in session_entries(path)
            if e.get("customType") == custom_type and e.get("type") == "custom_message"
        ]

    def tool_results(self, tool: str) -> list[dict[str, Any]]:
        """The lead's tool results of `tool`, oldest first (as persisted)."""
        path = self.lead.session.path
        assert path is not None
        out = []
        for entry in session_entries(path):
            message = entry.get("message") or {}
            if (
                entry.get("type") == "message"
                and message.get("role") == "toolResult"
                and message.get("toolName") == tool
            ):
                out.append(message)
        return out


def session_entries(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@contextlib.asynccontextmanager
async def teams_env(
    tmp: Path,
    script: str,
    *,
    settings: Settings | None = None,
    surfaces: tuple[str, ...] = ("teams",),
    registry: ModelRegistry | None = None,
) -> AsyncIterator[TeamsEnv]:
    sessions_root = tmp / "sessions"
    store = Repositories.open(tmp / "home" / "corral.db")
    registry = registry or ModelRegistry(Settings(), cwd=tmp / "work")
    host = ComposedHost(
        repositories=store,
        registry=registry,
        settings=settings or Settings(),
        sessions_root=sessions_root,
        roster_loader=lambda cwd: load_roster(cwd, user_dir=tmp / "config" / "agents", trust=False),
    )
    errors: list[BaseException] = []
    host.on_background_error = errors.append
    lead = make_lead(tmp, script, sessions_root=sessions_root)
    caller = await host.attach_lead(lead, surfaces=surfaces)
    try:
        yield TeamsEnv(host, lead, caller, tmp)
    finally:
        await host.aclose()
        lead.session.close()
    assert not errors, errors
