"""Shared setup for the managed-agent benchmarks: a temp data root, a scripted lead and a host."""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml


@contextmanager
def data_root(script: dict[str, Any], prefix: str) -> Iterator[Path]:
    """A temp dir with `CORRAL_HOME`, `XDG_CONFIG_HOME` and `CORRAL_SCRIPTS` pointing into it."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        root = Path(tmp)
        (root / "scripts").mkdir()
        (root / "work").mkdir()
        (root / "scripts" / "bench.yaml").write_text(yaml.safe_dump(script))
        saved = {k: os.environ.get(k) for k in ("CORRAL_HOME", "XDG_CONFIG_HOME", "CORRAL_SCRIPTS")}
        os.environ.update(
            CORRAL_HOME=str(root / "home"),
            XDG_CONFIG_HOME=str(root / "config"),
            CORRAL_SCRIPTS=str(root / "scripts"),
        )
        try:
            yield root
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


async def start_host(root: Path, *, settings: Any = None, tracer: Any = None) -> tuple[Any, Any, Any]:
    """A host with a scripted lead attached: `(host, lead, caller)` (`settings`: the host's, e.g. a
    budget; `tracer`: the store's statement tracer, `Database.open`'s)."""
    from corral.agent import AgentSession
    from corral.lead._host import ComposedHost
    from corral.llm import ModelRegistry
    from corral.orchestration import Repositories, load_roster
    from corral.session import SessionManager
    from corral.settings import Settings

    work = root / "work"
    registry = ModelRegistry(Settings(), cwd=work)
    model = registry.create_model(registry.resolve("scripted/bench"), cwd=work)
    session = SessionManager.create(work, sessions_root=root / "sessions")
    lead = AgentSession(session=session, model=model, thinking_level="off", tools=[], cwd=work)
    host = ComposedHost(
        repositories=Repositories.open(root / "home" / "corral.db", tracer=tracer),
        registry=registry,
        settings=settings,
        sessions_root=root / "sessions",
        roster_loader=lambda cwd: load_roster(cwd, user_dir=root / "none", trust=False),
    )
    caller = await host.attach_lead(lead, surfaces=())
    return host, lead, caller


def result_arrivals(lead: Any) -> dict[str, float]:
    """Record when each `corral-agent-result` message reaches the lead (`perf_counter` time by request
    id, filled as they arrive): subscribes to `lead`."""
    from corral.agent import MessageEndEvent
    from corral.llm import CustomMessage

    arrived: dict[str, float] = {}

    def on_lead(event: object) -> None:
        message = getattr(event, "message", None)
        if (
            isinstance(event, MessageEndEvent)
            and isinstance(message, CustomMessage)
            and message.custom_type == "corral-agent-result"
            and isinstance(message.details, dict)
        ):
            arrived[message.details["request_id"]] = time.perf_counter()

    lead.subscribe(on_lead)
    return arrived


def result_counts(lead: Any) -> dict[str, int]:
    """`corral-agent-result` entries per request id in the lead's session file."""
    counts: dict[str, int] = {}
    path = Path(lead.session.path)
    if not path.exists():  # nothing was written yet
        return counts
    for line in path.read_text().splitlines():
        entry = json.loads(line)
        if entry.get("type") == "custom_message" and entry.get("customType") == "corral-agent-result":
            request_id = entry["details"]["request_id"]
            counts[request_id] = counts.get(request_id, 0) + 1
    return counts


@dataclass(frozen=True)
class FanOut:
    """One fan-out: how long delegating and finishing took, and whether each result arrived once."""

    delegate_all_s: float
    wall_s: float
    exactly_once: bool


async def fan_out(host: Any, lead: Any, caller: Any, agents: int, *, prefix: str = "a") -> FanOut:
    """Delegate `agents` scouts at once (labels `<prefix>0`…), wait until every result is delivered.

    Exactly once: each of these delegations' results is in the lead's session once, and nothing
    else arrived since the fan-out began (a host may run several fan-outs, each with its prefix).
    """
    from corral.orchestration.surfaces import DelegateParams

    earlier = result_counts(lead)
    begin = time.perf_counter()
    started = await asyncio.gather(
        *(
            host.controller.delegate(
                caller, DelegateParams(definition="scout", task=f"t{i}", label=f"{prefix}{i}")
            )
            for i in range(agents)
        )
    )
    delegated = time.perf_counter() - begin
    await host.wait_until_quiet(caller.session_id)
    wall = time.perf_counter() - begin
    counts = {k: n for k, n in result_counts(lead).items() if earlier.get(k) != n}
    expected = {r.request_id for r in started}
    once = set(counts) == expected and all(n == 1 for n in counts.values())
    return FanOut(round(delegated, 3), round(wall, 3), once)
