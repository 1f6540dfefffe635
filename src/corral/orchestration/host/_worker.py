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
the start-up short. Orphaned panes are found and reaped in `corral._tmux.orphans`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from corral import _tracing
from corral._paths import ensure_private_dir

if TYPE_CHECKING:
    from corral.agent import AgentSession
    from corral.llm import ModelRegistry
    from corral.orchestration.host.protocol import BuiltAgent, LaunchPart, WorkerLaunch
    from corral.session import SessionManager
    from corral.settings import Settings

__all__ = [
    "WORKER_ENV_KEYS",
    "agent_from_description",
    "read_launch_file",
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
    `BuiltAgent`): its model, thinking level, system prompt, built-in tools (`None`: all), its skills
    (those of its names found here) and, for a read agent, its bash in the read-only sandbox, probed
    here first.

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
    if described.skills:
        from corral.skills import agent_catalog, skills_for_agent

        tools += skills_for_agent(agent_catalog(cwd, choice=described.skills))[0]
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
