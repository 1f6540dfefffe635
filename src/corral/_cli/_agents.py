"""`corral agents list|show|close|definitions`: the agent store from a shell.

`corral agents definitions` needs no session: it prints the definition roster of
the directory, every definition file that could not be loaded marked INVALID
with its path and the problem (the same roster the `list` action reads).

The agents commands act as the lead of one session: `--session` (a path or
id prefix), else the current directory's newest (unmanaged) session. They
read and act through the same `Host`/`Controller` as the `agent` tool, so
`list --json` prints exactly the records the `list` action returns. They
never run the lead's loop and never deliver results (the lead does that when
it resumes).

Teams agents (`spawn_agent`, `spawn_swarm_agents`) come from the same status
function as the `get_agent_status` tool (`host.teams.status`), so the shell,
the tool and the terminal app agree on phases. The shell's host runs none of
the agents, so where that function's answer depends on holding the run in
memory the shell decides from the store instead: a run in another live corral
process is `working` (like a run in a tmux pane; `stalled` after 15 minutes
without activity), a run whose host is gone is `lost`. Members that left
without a report (the status function no longer lists them) are added as
`stopped` or `lost`. Queued spawns exist only in a live host and never show.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar, cast

from corral._units import format_elapsed
from corral.errors import UsageError

if TYPE_CHECKING:
    from corral.agent import AgentSession
    from corral.lead._host import ComposedHost as Host
    from corral.orchestration import Caller, ListResult, Roster, TeamReportRecord

__all__ = ["agents_close", "agents_definitions", "agents_list", "agents_show", "roster_here"]

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


def _lead_path(cwd: Path, session: str | None) -> Path | None:
    from corral.session import SessionError, find_recent_session, resolve_session_arg

    work_dir = cwd.expanduser().resolve()
    try:
        return (
            resolve_session_arg(session, work_dir) if session is not None else find_recent_session(work_dir)
        )
    except SessionError:
        return None


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
    from corral.lead._host import ComposedHost
    from corral.llm import ModelRegistry
    from corral.orchestration import Caller, Repositories, default_store_path
    from corral.settings import load_settings

    work_dir = cwd.expanduser().resolve()
    session_id = _lead_session_id(work_dir, session)
    settings = load_settings(work_dir, on_warning=warn)
    host = ComposedHost(
        repositories=Repositories.open(default_store_path()),
        registry=ModelRegistry(settings, cwd=work_dir),
        settings=settings,
    )
    try:
        lead = cast("AgentSession", _ShellLead(_SessionRef(session_id), work_dir))
        return await action(host, Caller.lead(lead))
    finally:
        await host.aclose()


async def _records(host: Host, caller: Caller) -> list[dict[str, Any]]:
    return list((await _listed(host, caller)).agents)


async def _listed(host: Host, caller: Caller) -> ListResult:
    from corral.orchestration.surfaces import ListParams

    return await host.controller.list(caller, ListParams())


@dataclass(frozen=True)
class _Agents:
    managed: list[dict[str, Any]]
    """The `list` action's records."""
    teams: list[dict[str, Any]]
    """The teams agents' status snapshots, as the shell sees them."""
    invalid: list[dict[str, str]]
    """Definition files that could not be loaded (`{path, problem}`)."""
    tree: str | None = None
    """The tree's budget line, when it has one."""


def _agents(*, managed: bool, teams: bool) -> Callable[[Host, Caller], Awaitable[_Agents]]:
    """A host action reading only the kinds asked for (`--json` alone never touches the teams core)."""

    async def read(host: Host, caller: Caller) -> _Agents:
        listed = await _listed(host, caller) if managed else None
        return _Agents(
            [] if listed is None else list(listed.agents),
            await _team_snapshots(host, caller) if teams else [],
            [] if listed is None else list(listed.invalid_definitions),
        )

    return read


# --- teams agents ----------------------------------------------------------------------------------


async def _team_snapshots(host: Host, caller: Caller) -> list[dict[str, Any]]:
    """The lead's teams agents: `get_agent_status`'s snapshots, settled for a host that runs none of them."""
    from corral.orchestration.surfaces.teams._render import agent_snapshot_details

    # The teams tools answer the attached lead only; this host acts as that lead, read-only.
    if not host.runs.is_lead(caller.session_id):
        host.runs.add_lead(caller)
    status = await host.teams.status(caller, None)
    store = host.repositories
    now = int(time.time() * 1000)
    snapshots = [agent_snapshot_details(agent) for agent in status.agents]
    for snapshot in snapshots:
        member = store.teams.roster.team_member(snapshot["runId"]) if snapshot.get("runId") else None
        if member is None:
            continue
        snapshot.setdefault("modelSlot", member.tier)
        snapshot.setdefault("model", member.model)
        if member.live:
            snapshot["elapsedMs"] = max(0, now - member.created_at)
            _settle_elsewhere(host, snapshot, now)
    snapshots.extend(_left_without_report(host, caller.session_id, {s["name"] for s in snapshots}, now))
    return snapshots


def _settle_elsewhere(host: Host, snapshot: dict[str, Any], now: int) -> None:
    """Decide a live member's phase the status function could only call `stalled` (no run in this host)."""
    from corral.orchestration.teams._status import STALLED_AFTER_MS

    if snapshot.get("phase") != "stalled":
        return
    generation = host.kernel.get_generation(snapshot["runId"])
    if generation is None:
        return
    if generation.presence == "lost" or host.host_gone(generation):
        snapshot["phase"] = "lost"
        snapshot["error"] = generation.diagnostic or f"its host process {generation.pid or '?'} is gone"
    elif generation.runtime_kind == "inprocess":
        activity = generation.last_activity_at
        if activity is not None:
            snapshot["activityAgeMs"] = now - activity
        snapshot["phase"] = (
            "stalled" if activity is not None and now - activity > STALLED_AFTER_MS else "working"
        )
        snapshot["progress"] = f"runs in corral process {generation.pid}"


def _left_without_report(host: Host, lead_session_id: str, shown: set[str], now: int) -> list[dict[str, Any]]:
    """The latest run of each name not shown yet that left without a report: `stopped` or `lost`."""
    from corral.orchestration.teams._control import RECENT_COMPLETIONS

    store = host.repositories
    latest: dict[str, dict[str, Any]] = {}
    for member in store.teams.roster.team_members(lead_session_id, live_only=False):
        if member.depth != 0 or member.live or member.name in shown:
            continue
        if store.teams.reports.team_report_for_run(member.run_id) is not None:
            continue
        generation = store.kernel.get_generation(member.run_id)
        lost = generation is not None and generation.presence == "lost"
        snapshot: dict[str, Any] = {
            "name": member.name,
            "role": member.kind,
            "modelSlot": member.tier,
            "model": member.model,
            "runId": member.run_id,
            "phase": "lost" if lost else "stopped",
        }
        if generation is not None and generation.finalized_at is not None:
            snapshot["completedAgeMs"] = max(0, now - generation.finalized_at)
        if generation is not None and generation.diagnostic:
            snapshot["error"] = generation.diagnostic
        latest.pop(member.name, None)  # keep insertion order by the newest run
        latest[member.name] = snapshot
    return list(latest.values())[-RECENT_COMPLETIONS:]


def _when(snapshot: dict[str, Any]) -> str:
    if snapshot.get("completedAgeMs") is not None:
        return f"finished {format_elapsed(snapshot['completedAgeMs'])} ago"
    if snapshot.get("elapsedMs") is not None:
        return format_elapsed(snapshot["elapsedMs"])
    return "-"


def _outcome(snapshot: dict[str, Any]) -> str:
    if "reportId" not in snapshot:
        return "-"
    from corral.orchestration.teams.texts import outcome_label

    return outcome_label(snapshot.get("outcome"), snapshot.get("effectiveOutcome"))


def _team_line(snapshot: dict[str, Any]) -> str:
    fields = (
        snapshot["name"],
        snapshot.get("modelSlot") or snapshot.get("role") or "-",
        f"{snapshot.get('phase') or '-'}, {snapshot['rateLimit']}"
        if snapshot.get("rateLimit")
        else snapshot.get("phase") or "-",
        _when(snapshot),
        _outcome(snapshot),
        snapshot.get("runId") or "-",
    )
    return "\t".join(str(f) for f in fields)


def _team_show_text(snapshot: dict[str, Any], report: TeamReportRecord | None) -> str:
    lines = [
        f"name: {snapshot['name']}",
        "kind: teams agent",
        f"tier: {snapshot.get('modelSlot') or '-'} ({snapshot.get('role', '?')})",
        f"state: {snapshot.get('phase')}",
        f"run id: {snapshot.get('runId') or '-'}",
        f"model: {snapshot.get('model') or '-'}",
    ]
    if snapshot.get("completedAgeMs") is not None:
        lines.append(f"finished: {format_elapsed(snapshot['completedAgeMs'])} ago")
    elif snapshot.get("elapsedMs") is not None:
        lines.append(f"elapsed: {format_elapsed(snapshot['elapsedMs'])}")
    if snapshot.get("activityAgeMs") is not None:
        lines.append(f"last activity: {format_elapsed(snapshot['activityAgeMs'])} ago")
    for key, label in (("progress", "progress"), ("activeTool", "tool"), ("paneId", "pane")):
        if snapshot.get(key):
            lines.append(f"{label}: {snapshot[key]}")
    if "reportId" in snapshot:
        verification = snapshot.get("verification") or {}
        acceptance = snapshot.get("acceptance") or {}
        lines += [
            f"outcome: {_outcome(snapshot)}",
            f"verification: {verification.get('state', 'not-requested')}",
            f"acceptance: {acceptance.get('state', 'pending')}",
            f"report: {snapshot['reportId']}",
        ]
    if snapshot.get("summary"):
        lines.append(f"summary: {snapshot['summary']}")
    if snapshot.get("error"):
        lines.append(f"error: {snapshot['error']}")
    if report is not None:
        where = f" ({report.markdown_path})" if report.markdown_path else ""
        lines += ["", f"Report{where}:", report.content]
    return "\n".join(lines)


# --- commands ---------------------------------------------------------------------------------------


def _line(record: dict[str, Any]) -> str:
    actions = ", ".join(record.get("available_actions") or []) or "none"
    label = record.get("agent") or "(unattributed)"
    parent = f" (under {record['parent_label']})" if record.get("parent_label") else ""
    state = record.get("state")
    if record.get("rate_limit"):
        state = f"{state}, {record['rate_limit']}"
    line = f"{label}{parent}\t{state}\t{record.get('agent_definition', '')}\t{actions}"
    if record.get("budget"):
        from corral.orchestration.budgets import budget_text

        line += f"\tbudget {budget_text(record['budget'])}"
    return line


def _tree_budget_line(host: Host, caller: Caller, lead_path: Path | None) -> str | None:
    """The tree's spend against its limits, and the lead's own spend beside it (not counted)."""
    line = host.budgets.tree_line(caller.session_id)  # none without a tree limit
    if line is None:
        return None
    if lead_path is not None:
        from corral.agent import compute_session_stats
        from corral.orchestration.budgets import lead_line
        from corral.session import SessionManager

        with contextlib.suppress(Exception), SessionManager.open(lead_path, read_only=True) as lead:
            stats = compute_session_stats(
                lead.entries, session_file=None, session_id=lead.session_id, context_usage=None
            )
            line += f"; {lead_line(stats.tokens.total, stats.cost)}"
    return line


async def agents_list(
    *, cwd: Path, session: str | None, as_json: bool, out: IO[str], teams: bool = False
) -> int:
    """Print the lead's agents: managed ones, then teams ones, one line each.

    Args:
        cwd: The directory whose newest session is the lead (unless `session`).
        session: The lead session (a path or id prefix), or `None`.
        as_json: Print JSON: the `list` action's records (a JSON array), or with `teams` the teams
            agents' status snapshots (a JSON array).
        out: Where to print.
        teams: Only the teams agents.
    """
    wanted = _agents(managed=not teams, teams=teams or not as_json)
    if not as_json:
        read = wanted

        async def wanted_with_tree(host: Host, caller: Caller) -> _Agents:
            found = await read(host, caller)
            return replace(found, tree=_tree_budget_line(host, caller, _lead_path(cwd, session)))

        wanted = wanted_with_tree
    agents = await _with_host(cwd, session, wanted)
    if as_json:
        out.write(json.dumps(agents.teams if teams else agents.managed, indent=2) + "\n")
        return 0
    lines = [] if teams else [_line(r) for r in agents.managed]
    lines += [_team_line(s) for s in agents.teams]
    if not lines:
        out.write("No teams agents.\n" if teams else "No agents.\n")
    for line in lines:
        out.write(line + "\n")
    for item in agents.invalid:  # never silently dropped; `corral agents definitions` has the roster
        out.write(f"INVALID\t{item['path']}: {item['problem']}\n")
    if agents.tree is not None:
        out.write(agents.tree + "\n")
    return 0


async def agents_show(label: str, *, cwd: Path, session: str | None, as_json: bool, out: IO[str]) -> int:
    """Print one agent: a managed agent's `list` record, else a teams agent's status (and its report)."""
    from corral.orchestration import TargetNotFoundError

    async def find(
        host: Host, caller: Caller
    ) -> tuple[dict[str, Any] | None, dict[str, Any] | None, TeamReportRecord | None]:
        records = await _records(host, caller)
        found = next((r for r in records if r.get("agent") == label), None)
        if found is not None:
            return found, None, None
        snapshot = next((s for s in await _team_snapshots(host, caller) if s.get("name") == label), None)
        report = None
        if snapshot is not None and snapshot.get("runId"):
            report = host.repositories.teams.reports.team_report_for_run(snapshot["runId"])
        return None, snapshot, report

    found, snapshot, report = await _with_host(cwd, session, find)
    if found is not None:
        if as_json:
            out.write(json.dumps(found, indent=2) + "\n")
        else:
            for key, value in found.items():
                shown = ", ".join(value) if isinstance(value, list) else value
                out.write(f"{key}: {shown}\n")
        return 0
    if snapshot is None:
        raise TargetNotFoundError(
            f"no agent {label} in this session's tree; run `corral agents list` for the labels",
            operation="show",
        )
    if as_json:
        shown = dict(snapshot)
        if report is not None:
            shown |= {"report": report.content, "reportPath": report.markdown_path}
        out.write(json.dumps(shown, indent=2) + "\n")
    else:
        out.write(_team_show_text(snapshot, report) + "\n")
    return 0


async def agents_close(label: str, *, cwd: Path, session: str | None, as_json: bool, out: IO[str]) -> int:
    """Close one agent (and its agents) the lead owns directly; teams agents are refused."""
    from corral.orchestration import InvalidRequestError
    from corral.orchestration.surfaces import CloseParams, render_result

    async def close(host: Host, caller: Caller) -> dict[str, Any]:
        managed = any(r.get("agent") == label for r in await _records(host, caller))
        if not managed and any(s.get("name") == label for s in await _team_snapshots(host, caller)):
            raise InvalidRequestError(
                f"{label} is a teams agent and close handles managed agents only; "
                "have the lead stop it with stop_teammate",
                operation="close",
            )
        result = await host.controller.close(caller, CloseParams(agent=label))
        return result.to_details()

    details = await _with_host(cwd, session, close)
    out.write((json.dumps(details, indent=2) if as_json else render_result(details)) + "\n")
    return 0


def roster_here(cwd: Path, *, on_warning: Callable[[str], None] | None = None) -> Roster:
    """The definition roster of `cwd` as a lead there would see it (trust, `[model_aliases]`, models).

    Raises:
        SettingsError: the settings do not load.
    """
    from corral.llm import ModelRegistry
    from corral.orchestration import load_roster, model_names
    from corral.settings import load_settings

    settings = load_settings(cwd, on_warning=on_warning)
    return load_roster(cwd, models=model_names(settings.model_aliases, ModelRegistry(settings, cwd=cwd)))


def agents_definitions(*, cwd: Path, as_json: bool, out: IO[str]) -> int:
    """Print the definitions of `cwd` (name, state, where from, description), then each INVALID file."""
    from corral._cli._launch import warn

    work_dir = cwd.expanduser().resolve()
    roster = roster_here(work_dir, on_warning=warn)
    invalid = [{"path": str(issue.path), "problem": issue.problem} for issue in roster.issues]
    if as_json:
        data = {"definitions": [defn.metadata() for defn in roster.definitions], "invalid": invalid}
        out.write(json.dumps(data, indent=2) + "\n")
        return 0
    for defn in roster.definitions:
        state = "enabled" if defn.enabled else f"disabled ({defn.disabled_reason or 'disabled'})"
        where = defn.layer if defn.format == "corral" else f"{defn.layer}, {defn.format} file"
        out.write(f"{defn.name}\t{state}\t{where}\t{defn.description}\n")
    for item in invalid:
        out.write(f"INVALID\t{item['path']}: {item['problem']}\n")
    return 0
