"""A host process for the Ray tests: delegates agents on Ray, then waits to be killed.

Usage: `python ray_host_driver.py <dir> <address> <namespace> [--workspace=<mode>] [--teams|--handoff] <label>...`.
It writes the lead's session path to `<dir>/lead.txt`, delegates one `builder` agent per label on
the Ray runtime (`[ray] workspace` = `<mode>`, default `shared`) — with `--teams`, spawns one
`read-collect` teams member per label instead; with `--handoff`, delegates a `local` agent
(a definition with `runtime: inprocess`) and hands it off to Ray once it works —, prints `started`
and waits (the test kills it with SIGKILL, or a `CORRAL_FAULTS` fault point does). A failed
delegate prints `error <category>: <message>` and exits with 3.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from corral.agent import AgentSession
from corral.lead._host import ComposedHost
from corral.llm import ModelRegistry
from corral.orchestration import OrchestrationError, Repositories, load_roster
from corral.orchestration.surfaces import DelegateParams
from corral.orchestration.surfaces.teams._wire import parse_spawn
from corral.session import SessionManager
from corral.settings import RaySettings, Settings, TeamsSettings


async def main(root: Path, address: str, namespace: str, args: list[str]) -> int:
    workspace = "shared"
    if args and args[0].startswith("--workspace="):
        workspace = args.pop(0).removeprefix("--workspace=")
    teams = bool(args) and args[0] == "--teams"
    handoff = bool(args) and args[0] == "--handoff"
    labels = args[1:] if teams or handoff else args
    work = root / "work"
    sessions = root / "sessions"
    session = SessionManager.create(work, sessions_root=sessions)
    session.flush()
    assert session.path is not None
    (root / "lead.txt").write_text(str(session.path))
    registry = ModelRegistry(Settings(), cwd=work)
    model = registry.create_model(registry.resolve("scripted/team"), cwd=work)
    lead = AgentSession(session=session, model=model, thinking_level="off", tools=[], cwd=work)
    settings = Settings(
        runtime="ray",
        ray=RaySettings(
            address=address,
            namespace=namespace,
            num_cpus=0.1,
            agents_per_worker=4,
            workspace=workspace,  # type: ignore[arg-type]
        ),
        teams=TeamsSettings(read_sandbox="off"),
    )
    host = ComposedHost(
        repositories=Repositories.open(root / "home" / "corral.db"),
        registry=registry,
        settings=settings,
        sessions_root=sessions,
        roster_loader=lambda cwd: load_roster(cwd, user_dir=root / "config" / "agents", trust=False),
    )
    caller = await host.attach_lead(lead, surfaces=("teams",) if teams else ())
    for label in labels:
        try:
            if teams:
                request = parse_spawn({"name": label, "prompt": f"do {label}", "model_slot": "read-collect"})
                await host.teams.spawning.spawn(caller, request)
                continue
            definition = "local" if handoff else "builder"
            started = await host.controller.delegate(
                caller, DelegateParams(definition=definition, task=f"do {label}", label=label)
            )
            while handoff:
                moved = await host.handoff(started.run_id)
                if (moved.status, moved.reason) != ("refused", "not_active"):
                    assert moved.status == "moved", moved.message
                    break
                await asyncio.sleep(0.01)  # not yet in its first model call
        except OrchestrationError as exc:
            print(f"error {exc.category}: {exc}", flush=True)
            await host.aclose()
            return 3
    print("started", flush=True)
    await asyncio.Event().wait()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4:])))
