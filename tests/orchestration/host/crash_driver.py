"""Crash-test driver: a lead that delegates N agents on a scripted model, resumable after SIGKILL.

Usage: `python crash_driver.py <dir> <n>`. The lead's session path is kept in
`<dir>/lead.txt`; a restarted driver resumes that session (→ restart recovery),
delegates whatever is still missing, waits until the lead is quiet and prints
`done`. `CORRAL_FAULTS` (read by `corral.orchestration.kernel._faults`) kills it at
injected points.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from corral.agent import AgentSession
from corral.lead._host import ComposedHost
from corral.llm import ModelRegistry
from corral.orchestration import Repositories, load_roster
from corral.orchestration.surfaces import DelegateParams
from corral.session import SessionManager
from corral.settings import Settings


async def main(root: Path, count: int) -> None:
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
    model = registry.create_model(registry.resolve("scripted/crash"), cwd=work)
    lead = AgentSession(session=session, model=model, thinking_level="off", tools=[], cwd=work)
    store = Repositories.open(root / "home" / "corral.db")
    host = ComposedHost(
        repositories=store,
        registry=registry,
        sessions_root=sessions,
        roster_loader=lambda cwd: load_roster(cwd, user_dir=root / "none", trust=False),
    )
    caller = await host.attach_lead(lead, surfaces=())
    started = len(store.kernel.generations(owner_session_id=caller.session_id, include_finalized=True))
    for index in range(started, count):
        await host.controller.delegate(caller, DelegateParams(definition="scout", task=f"task {index}"))
    await asyncio.wait_for(host.wait_until_quiet(caller.session_id), 60)
    await host.aclose()
    session.close()
    print("done")


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), int(sys.argv[2])))
