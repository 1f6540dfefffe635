"""A host process for the tmux restart test: delegates agents on the tmux runtime, then waits to be killed.

Usage: `python tmux_host_driver.py <dir> <socket> <label>...`. It writes the lead's
session path to `<dir>/lead.txt`, delegates one `scout` per label, prints
`started` and then waits (the test kills it with SIGKILL).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from corral.agent import AgentSession
from corral.llm import ModelRegistry
from corral.orchestration import Host, Store, load_roster
from corral.orchestration.surfaces import DelegateParams
from corral.session import SessionManager
from corral.settings import Settings


async def main(root: Path, socket: Path, labels: list[str]) -> None:
    work = root / "work"
    sessions = root / "sessions"
    session = SessionManager.create(work, sessions_root=sessions)
    session.flush()
    assert session.path is not None
    (root / "lead.txt").write_text(str(session.path))
    registry = ModelRegistry(Settings(), cwd=work)
    model = registry.create_model(registry.resolve("scripted/team"), cwd=work)
    lead = AgentSession(session=session, model=model, thinking_level="off", tools=[], cwd=work)
    host = Host(
        store=Store.open(root / "home" / "corral.db"),
        registry=registry,
        settings=Settings(runtime="tmux"),
        sessions_root=sessions,
        roster_loader=lambda cwd: load_roster(cwd, user_dir=root / "config" / "agents", trust=False),
        tmux_socket=socket,
    )
    caller = await host.attach_lead(lead, surfaces=())
    for label in labels:
        await host.controller.delegate(
            caller, DelegateParams(definition="scout", task=f"do {label}", label=label)
        )
    print("started", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:]))
