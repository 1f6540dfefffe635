"""A host process for the tmux restart tests: starts agents on tmux, then waits to be killed.

Usage: `python tmux_host_driver.py <dir> <socket> [--handoff] [--definition NAME] <label>...`.
It writes the lead's session path to `<dir>/lead.txt` and delegates one agent
per label: on the tmux runtime, or (`--handoff`) in-process and then moved to
a pane with `Host.handoff`. It prints `started` and then waits (the test kills
it with SIGKILL, or `CORRAL_FAULTS` kills it at a fault point on the way).
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from corral.agent import AgentSession
from corral.lead._host import ComposedHost
from corral.llm import ModelRegistry
from corral.orchestration import Repositories, load_roster
from corral.orchestration.surfaces import DelegateParams
from corral.session import SessionManager
from corral.settings import Settings


async def main(root: Path, socket: Path, labels: list[str], *, definition: str, handoff: bool) -> None:
    work = root / "work"
    sessions = root / "sessions"
    session = SessionManager.create(work, sessions_root=sessions)
    session.flush()
    assert session.path is not None
    (root / "lead.txt").write_text(str(session.path))
    registry = ModelRegistry(Settings(), cwd=work)
    model = registry.create_model(registry.resolve("scripted/team"), cwd=work)
    lead = AgentSession(session=session, model=model, thinking_level="off", tools=[], cwd=work)
    host = ComposedHost(
        repositories=Repositories.open(root / "home" / "corral.db"),
        registry=registry,
        settings=Settings() if handoff else Settings(runtime="tmux"),
        sessions_root=sessions,
        roster_loader=lambda cwd: load_roster(cwd, user_dir=root / "config" / "agents", trust=False),
        tmux_socket=socket,
    )
    caller = await host.attach_lead(lead, surfaces=())
    for label in labels:
        started = await host.controller.delegate(
            caller, DelegateParams(definition=definition, task=f"do {label}", label=label)
        )
        while handoff:
            moved = await host.handoff(started.run_id)
            if (moved.status, moved.reason) != ("refused", "not_active"):
                assert moved.status == "moved", moved.message
                break
            await asyncio.sleep(0.01)  # not yet in its first model call
    print("started", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("root", type=Path)
    parser.add_argument("socket", type=Path)
    parser.add_argument("labels", nargs="+")
    parser.add_argument("--handoff", action="store_true")
    parser.add_argument("--definition", default="scout")
    args = parser.parse_args()
    asyncio.run(main(args.root, args.socket, args.labels, definition=args.definition, handoff=args.handoff))
