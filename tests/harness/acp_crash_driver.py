"""Crash-test driver: a lead that delegates one ACP agent (the fake), resumable after SIGKILL.

Usage: `python acp_crash_driver.py <dir> <task> [<continue task>]`. The lead's session path is kept in
`<dir>/lead.txt`; a restarted driver resumes that session (→ restart recovery), delegates only when no
agent was delegated yet, waits until the lead is quiet; with a continue task, continues the agent's
session once (only while it has one generation) and waits again; then prints `done`. `CORRAL_FAULTS` kills it at injected
points; definitions are read from `<dir>/agents`, the lead's script from `$CORRAL_SCRIPTS`.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from corral.agent import AgentSession
from corral.lead._host import ComposedHost
from corral.llm import ModelRegistry
from corral.orchestration import Repositories, load_roster
from corral.orchestration.surfaces import ContinueParams, DelegateParams
from corral.session import SessionManager
from corral.settings import Settings


async def main(root: Path, task: str, again: str | None) -> None:
    work = root / "work"
    work.mkdir(exist_ok=True)
    sessions = root / "sessions"
    marker = root / "lead.txt"
    if marker.exists():
        session = SessionManager.open(Path(marker.read_text()))
    else:
        session = SessionManager.create(work, sessions_root=sessions)
        session.flush()
        assert session.path is not None
        marker.write_text(str(session.path))
    registry = ModelRegistry(Settings(), cwd=work)
    model = registry.create_model(registry.resolve("scripted/lead"), cwd=work)
    lead = AgentSession(session=session, model=model, thinking_level="off", tools=[], cwd=work)
    store = Repositories.open(root / "home" / "corral.db")
    host = ComposedHost(
        repositories=store,
        registry=registry,
        sessions_root=sessions,
        roster_loader=lambda cwd: load_roster(cwd, user_dir=root / "agents", trust=False),
    )
    caller = await host.attach_lead(lead, surfaces=())
    if not store.kernel.generations(owner_session_id=caller.session_id, include_finalized=True):
        await host.controller.delegate(caller, DelegateParams(definition="fake", task=task))
    await asyncio.wait_for(host.wait_until_quiet(caller.session_id), 120)
    generations = store.kernel.generations(owner_session_id=caller.session_id, include_finalized=True)
    if again is not None and len(generations) == 1:
        await host.controller.continue_(caller, ContinueParams(session=generations[0].session_id, task=again))
        await asyncio.wait_for(host.wait_until_quiet(caller.session_id), 120)
    await host.aclose()
    session.close()
    print("done", flush=True)


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None))
