"""`corral agents list|show|close` and `corral trust|untrust`: the agent store from a shell.

The agents commands act as the lead of one session: `--session` (a path or
id prefix), else the current directory's newest (unmanaged) session. They
read and act through the same `Host`/`Controller` as the `agent` tool, so
`list --json` prints exactly the records the `list` action returns. They
never run the lead's loop and never deliver results (the lead does that when
it resumes).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar, cast

from corral.errors import UsageError

if TYPE_CHECKING:
    from corral.agent import AgentSession
    from corral.orchestration import Caller, Host

__all__ = ["agents_close", "agents_list", "agents_show", "trust", "untrust"]

_T = TypeVar("_T")


@dataclass(frozen=True)
class _SessionRef:
    session_id: str
    """The lead session's id."""


@dataclass(frozen=True)
class _ShellLead:
    """Stands in for the lead's `AgentSession` where a controller action only needs its identity."""

    session: _SessionRef
    cwd: Path


def _lead_session_id(cwd: Path, session: str | None) -> str:
    from corral.session import find_recent_session, resolve_session_arg

    path = resolve_session_arg(session, cwd) if session is not None else find_recent_session(cwd)
    if path is None:
        raise UsageError(f"no session in {cwd}; pass --session PATH|ID or run `corral run` there first")
    try:
        with path.open("rb") as handle:
            header = json.loads(handle.readline())
    except (OSError, ValueError):
        header = None
    if not isinstance(header, dict) or header.get("type") != "session" or not header.get("id"):
        raise UsageError(f"{path} is not a session file; pass --session with a session path or id")
    return str(header["id"])


async def _with_host(cwd: Path, session: str | None, action: Callable[[Host, Caller], Awaitable[_T]]) -> _T:
    from corral._cli._launch import warn
    from corral.llm import ModelRegistry
    from corral.orchestration import Caller, Host, Store, default_store_path
    from corral.settings import load_settings

    work_dir = cwd.expanduser().resolve()
    session_id = _lead_session_id(work_dir, session)
    settings = load_settings(work_dir, on_warning=warn)
    host = Host(
        store=Store.open(default_store_path()),
        registry=ModelRegistry(settings, cwd=work_dir),
        settings=settings,
    )
    try:
        lead = cast("AgentSession", _ShellLead(_SessionRef(session_id), work_dir))
        return await action(host, Caller.lead(lead))
    finally:
        await host.aclose()


async def _records(host: Host, caller: Caller) -> list[dict[str, Any]]:
    from corral.orchestration.surfaces import ListParams

    result = await host.controller.list(caller, ListParams())
    return list(result.agents)


def _line(record: dict[str, Any]) -> str:
    actions = ", ".join(record.get("available_actions") or []) or "none"
    label = record.get("agent") or "(unattributed)"
    parent = f" (under {record['parent_label']})" if record.get("parent_label") else ""
    return f"{label}{parent}\t{record.get('state')}\t{record.get('agent_definition', '')}\t{actions}"


async def agents_list(*, cwd: Path, session: str | None, as_json: bool, out: IO[str]) -> int:
    """Print the lead's agents: a JSON array of `list` records, or one line per agent."""
    records = await _with_host(cwd, session, _records)
    if as_json:
        out.write(json.dumps(records, indent=2) + "\n")
    elif not records:
        out.write("No agents.\n")
    else:
        for record in records:
            out.write(_line(record) + "\n")
    return 0


async def agents_show(label: str, *, cwd: Path, session: str | None, as_json: bool, out: IO[str]) -> int:
    """Print one agent's `list` record."""
    from corral.orchestration import TargetNotFoundError

    records = await _with_host(cwd, session, _records)
    found = next((r for r in records if r.get("agent") == label), None)
    if found is None:
        raise TargetNotFoundError(
            f"no agent {label} in this session's tree; run `corral agents list` for the labels",
            operation="show",
        )
    if as_json:
        out.write(json.dumps(found, indent=2) + "\n")
    else:
        for key, value in found.items():
            shown = ", ".join(value) if isinstance(value, list) else value
            out.write(f"{key}: {shown}\n")
    return 0


async def agents_close(label: str, *, cwd: Path, session: str | None, as_json: bool, out: IO[str]) -> int:
    """Close one agent (and its agents) the lead owns directly."""
    from corral.orchestration.surfaces import CloseParams, render_result

    async def close(host: Host, caller: Caller) -> dict[str, Any]:
        result = await host.controller.close(caller, CloseParams(agent=label))
        return result.to_details()

    details = await _with_host(cwd, session, close)
    out.write((json.dumps(details, indent=2) if as_json else render_result(details)) + "\n")
    return 0


def trust(path: Path, *, out: IO[str]) -> int:
    """Trust a project directory (its `.corral/agents/` definitions and settings count)."""
    from corral.trust import trust_project

    real = trust_project(path)
    out.write(f"Trusted {real}\n")
    return 0


def untrust(path: Path, *, out: IO[str]) -> int:
    """Stop trusting a project directory."""
    from corral.trust import untrust_project

    if untrust_project(path):
        out.write(f"No longer trusted: {path.resolve()}\n")
    else:
        out.write(f"Was not trusted: {path.resolve()}\n")
    return 0
