"""How a host launches a `corral worker` for a tmux generation.

The host writes the agent's launch description (a `host.protocol.WorkerLaunch`:
its `ManagedAgentSpec` or, after a handoff, its exact `BuiltAgent`, the
extensions' parts, the settings, where to touch the heartbeat) to a private
file `<tmux dir>/launch/<run-id>.json` (`0600`); the worker reads it
(`read_launch_file`), opens the same store and session file, and builds the
agent with the same builder the in-process path uses (`build_managed_agent`),
or rebuilds a described one (`agent_from_description`).

The pane runs `python -m corral._tmux.worker` (the code behind `corral
worker`) with the host's interpreter: it skips the CLI's imports, which keeps
the start-up short.

Orphans: a pane of the private server whose generation is finalized, or that
no live generation of the store names, is reported by `find_orphans` and
removed by `reap_orphans` (identity-proven, never silently). A worker whose
host died before recording its pane is named by its command line
(`--run-id`), so it is no orphan: the next host adopts it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from corral import _tracing
from corral._paths import ensure_private_dir
from corral.runtime import PaneInfo, RuntimeError_, TmuxRuntime

if TYPE_CHECKING:
    from corral.agent import AgentSession
    from corral.llm import ModelRegistry
    from corral.orchestration.host.protocol import BuiltAgent, LaunchPart, WorkerLaunch
    from corral.orchestration.kernel._generations import Generations
    from corral.session import SessionManager
    from corral.settings import Settings

__all__ = [
    "WORKER_ENV_KEYS",
    "Orphan",
    "agent_from_description",
    "find_orphans",
    "read_launch_file",
    "reap_orphans",
    "worker_argv",
    "worker_env",
    "write_launch_file",
]

WORKER_ENV_KEYS = (
    "CORRAL_HOME",
    "CORRAL_SCRIPTS",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "HOME",
    "PATH",
    "PYTHONPATH",
    "VIRTUAL_ENV",
)
"""Environment passed into a worker's pane (a tmux server keeps the environment it started with)."""


def write_launch_file(tmux_dir: Path, run_id: str, launch: WorkerLaunch) -> Path:
    """Write the launch description of `run_id` (`0600`) and return its path."""
    folder = ensure_private_dir(tmux_dir / "launch")
    path = folder / f"{run_id}.json"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(launch.to_json())
    return path


def read_launch_file(path: Path, *, parts: Iterable[type[LaunchPart]] = ()) -> WorkerLaunch:
    """The launch description a host wrote to `path` (`parts`: the extension parts the reader knows).

    Raises:
        OSError: The file cannot be read.
        LaunchError: It is not a description this corral reads (`WorkerLaunch.from_json`).
    """
    from corral.orchestration.host.protocol import WorkerLaunch

    return WorkerLaunch.from_json(path.read_bytes(), parts=parts)


def worker_argv(run_id: str, store_path: Path, launch: Path) -> tuple[str, ...]:
    """The pane's command line: this interpreter running the worker."""
    return (
        sys.executable,
        "-m",
        "corral._tmux.worker",
        "--run-id",
        run_id,
        "--store",
        str(store_path),
        "--launch",
        str(launch),
    )


def worker_env() -> dict[str, str]:
    """The host's environment entries a worker needs (`WORKER_ENV_KEYS` that are set), and while
    tracing is on the trace context to continue (`TRACEPARENT` of the current span: the tool call
    that starts the worker, the trace file, the `OTEL_*` configuration)."""
    env = {key: os.environ[key] for key in WORKER_ENV_KEYS if key in os.environ}
    carrier = _tracing.current_carrier()
    if carrier is not None:
        env.update(carrier.as_env())
    return env


@dataclass(frozen=True, slots=True)
class Orphan:
    """A pane no live generation accounts for."""

    pane: PaneInfo
    reason: str
    """`finalized` (its generation ended) or `unknown` (no generation of the store names it)."""
    run_id: str | None = None


async def find_orphans(kernel: Generations, tmux: TmuxRuntime) -> list[Orphan] | None:
    """Panes of the private server whose generation is finalized or unknown (`None`: tmux failed)."""
    panes = await tmux.panes()
    if panes is None:
        return None
    tmux_generations = [g for g in kernel.generations(include_finalized=True) if g.runtime_kind == "tmux"]
    live = {g.pane_id: g for g in tmux_generations if g.pane_id and g.phase != "finalized"}
    ended = {g.pane_id: g for g in tmux_generations if g.pane_id and g.phase == "finalized"}
    # A live generation whose host died before recording its pane: its worker is no orphan.
    unrecorded = {
        pane.pane_id
        for placing in tmux_generations
        if placing.pane_id is None and placing.phase != "finalized"
        if (pane := tmux.pane_running(panes, ("--run-id", placing.run_id))) is not None
    }
    orphans: list[Orphan] = []
    for pane in panes:
        if pane.pane_id in unrecorded:
            continue
        generation = live.get(pane.pane_id)
        if generation is not None and (generation.pid is None or generation.pid == pane.pid):
            continue
        finished = ended.get(pane.pane_id)
        if finished is not None and (finished.pid is None or finished.pid == pane.pid):
            orphans.append(Orphan(pane, "finalized", finished.run_id))
        else:
            orphans.append(Orphan(pane, "unknown"))
    return orphans


async def reap_orphans(kernel: Generations, tmux: TmuxRuntime) -> tuple[list[Orphan], dict[str, str]]:
    """Kill every orphan pane (identity-proven); `(reaped, errors by pane id)`.

    Raises:
        RuntimeError_: tmux could not list the panes.
    """
    orphans = await find_orphans(kernel, tmux)
    if orphans is None:
        raise RuntimeError_(f"cannot list the panes of the tmux server at {tmux.socket}")
    reaped: list[Orphan] = []
    errors: dict[str, str] = {}
    for orphan in orphans:
        try:
            await tmux.kill_pane(orphan.pane)
        except RuntimeError_ as exc:
            errors[orphan.pane.pane_id] = str(exc)
        else:
            reaped.append(orphan)
    return reaped, errors


async def agent_from_description(
    described: BuiltAgent,
    *,
    session: SessionManager,
    registry: ModelRegistry,
    settings: Settings,
    cwd: Path,
    label: str,
) -> AgentSession:
    """An agent exactly as its host described it to a worker (a handoff's, a Ray teams member's
    `BuiltAgent`): its model, thinking level, system prompt, built-in tools (`None`: all) and, for a
    read agent, its bash in the read-only sandbox, probed here first.

    Raises:
        ValueError: The read-only sandbox does not work here (a read agent never runs without it).
    """
    from corral.agent import AgentSession
    from corral.agent.tools import ReadOnlySandbox, create_builtin_tools, read_sandbox_policy
    from corral.llm import parse_model_ref

    sandbox: ReadOnlySandbox | None = None
    if described.sandbox:
        sandbox = ReadOnlySandbox(policy=read_sandbox_policy(settings))
        status = await sandbox.probe()
        if not status.ok:
            raise ValueError(f"the read-only sandbox does not work here: {status.reason}")
    names = described.tools
    tools = create_builtin_tools(
        cwd,
        shell_path=settings.shell_path,
        names=None if names is None else list(names),
        sandbox=sandbox,
    )
    model = registry.create_model(registry.resolve(parse_model_ref(described.model)), cwd=cwd)
    return AgentSession(
        session=session,
        model=model,
        thinking_level=described.thinking,
        tools=tools,
        cwd=cwd,
        settings=settings,
        system_prompt=described.system_prompt,
        agent_name=label,
    )
