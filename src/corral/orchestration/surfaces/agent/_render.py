"""Model-facing texts of the agent surface.

Every function here is pure: it takes the `details` object an action returns
(the controller result's `to_details()`) or a structured error, and returns
the short text the model reads. Raw evidence stays in `details`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "DEFAULT_NEXT_ACTIONS",
    "DELEGATION_GUIDANCE",
    "render_error",
    "render_inspect",
    "render_list",
    "render_result",
    "render_transcript",
]

DELEGATION_GUIDANCE = (
    "Delegation guidance: each assignment now has exactly one executor, the agent you started. "
    "Do not do the same work yourself and do not start a second agent for it. "
    "Do not poll with list, inspect or transcript: the result, or a question from the agent, "
    "is delivered to you as a message and wakes you. Continue with other work or end your turn."
)
"""Text of the hidden `corral-delegation-guidance` message steered after the first delegation of a turn."""

DEFAULT_NEXT_ACTIONS: dict[str, str] = {
    "invalid_request": "Fix the fields the message names and call again.",
    "target_not_found": "Call list and use an exact label of an agent you own directly.",
    "target_ambiguous": "Call list to refresh; act only on an agent whose identity is unambiguous.",
    "agent_busy": "Call list and use only the actions in the agent's available_actions; do not poll.",
    "agent_label_exists": "Choose another label, or omit label to get a free one.",
    "pane_not_ready": "Check the definition and its model, then delegate again once.",
    "rollback_failure": "Call list; close the agent if it is still listed, then retry.",
    "internal_failure": "Do not retry blindly; report the failure to the user.",
}
"""What the model should do after each error category, when the error names nothing better."""


def _value(record: Mapping[str, Any], key: str) -> str:
    value = record.get(key)
    return "" if value is None else str(value)


def _agent_line(record: Mapping[str, Any], depth: int) -> list[str]:
    indent = "  " * depth
    label = record.get("agent") or "(unattributed record)"
    parts = [f"{indent}- {label} [{_value(record, 'state') or 'unknown'}]"]
    definition = record.get("agent_definition")
    if definition:
        parts.append(f"definition={definition}")
    actions = record.get("available_actions") or []
    parts.append("actions: " + (", ".join(str(a) for a in actions) if actions else "none"))
    session = record.get("pi_session_id")
    if session:
        parts.append(f"session={session}")
    lines = [" · ".join(parts)]
    notes: list[str] = []
    if record.get("stale"):
        minutes = int(record.get("inactive_ms") or 0) // 60000
        notes.append(f"stale: no activity for {minutes} min (advisory only; do not close for this alone)")
    if record.get("rate_limit"):
        notes.append(str(record["rate_limit"]))
    if record.get("recovery_only"):
        notes.append("recovery only")
    for key in ("diagnostic", "cleanup_error"):
        if record.get(key):
            notes.append(f"{key.replace('_', ' ')}: {record[key]}")
    budget = record.get("budget")
    if isinstance(budget, Mapping) and budget:
        from corral.orchestration.budgets import budget_text

        notes.append(f"budget: {budget_text(budget)}")
    result_error = record.get("result_error")
    if isinstance(result_error, Mapping) and result_error:
        notes.append(f"result error: {result_error.get('message') or result_error}")
    lines.extend(f"{indent}    {note}" for note in notes)
    return lines


def render_list(details: Mapping[str, Any]) -> str:
    """The `list` text: agents as an indented hierarchy, then the definition names.

    A record with a `parent_label` that is itself listed is shown under its parent;
    the others are roots. Children are sorted by label.
    """
    agents: Sequence[Mapping[str, Any]] = details.get("agents") or []
    labels = {str(a["agent"]) for a in agents if a.get("agent")}
    children: dict[str | None, list[Mapping[str, Any]]] = {}
    for record in agents:
        parent = record.get("parent_label")
        key = str(parent) if parent and parent in labels else None
        children.setdefault(key, []).append(record)
    for rows in children.values():
        rows.sort(key=lambda r: str(r.get("agent") or "~"))

    lines: list[str] = []
    if agents:
        lines.append(f"Agents ({len(agents)}):")
        seen: set[str] = set()

        def walk(parent: str | None, depth: int) -> None:
            for record in children.get(parent, []):
                label = record.get("agent")
                lines.extend(_agent_line(record, depth))
                if label and str(label) not in seen:
                    seen.add(str(label))
                    walk(str(label), depth + 1)

        walk(None, 0)
        lines.append("Use only the actions listed for an agent; results and questions arrive as messages.")
    else:
        lines.append("Agents: none.")

    definitions: Sequence[Mapping[str, Any]] = details.get("agent_definitions") or []
    enabled = [str(d["name"]) for d in definitions if d.get("enabled", True) is not False]
    disabled = [str(d["name"]) for d in definitions if d.get("enabled", True) is False]
    lines.append("Definitions: " + (", ".join(enabled) if enabled else "none"))
    if disabled:
        lines.append("Disabled definitions: " + ", ".join(disabled))
    invalid: Sequence[Mapping[str, Any]] = details.get("invalid_definitions") or []
    if invalid:
        lines.append(f"Invalid definition files ({len(invalid)}; not loaded, tell the user):")
        lines.extend(f"- INVALID {item.get('path')}: {item.get('problem')}" for item in invalid)
    return "\n".join(lines)


def render_inspect(details: Mapping[str, Any]) -> str:
    """The `inspect` text: agent, session, runtime id, foreground commands and recent activity."""
    lines = [
        f"agent: {_value(details, 'agent')} ({_value(details, 'presentation_agent_definition')})",
        f"session: {_value(details, 'session_id')}",
        f"runtime: {_value(details, 'pane_id')}",
    ]
    if details.get("rate_limit"):
        lines.append(f"model request: {details['rate_limit']}")
    processes = details.get("process")
    if processes:
        lines.append("foreground commands:")
        for proc in processes:
            command = proc.get("cmdline") or proc.get("argv0") or "?"
            lines.append(f"  {proc.get('pid', '?')} {command}")
    else:
        lines.append("foreground commands: none")
    output = details.get("recent_output")
    if output:
        heading = (
            "recent activity (older output cut):"
            if details.get("recent_output_truncated")
            else "recent activity:"
        )
        lines.append(heading)
        lines.append(str(output))
    else:
        lines.append("recent activity: none")
    return "\n".join(lines)


def render_transcript(details: Mapping[str, Any]) -> str:
    """The `transcript` text: a heading, then the controller's bounded projection (`finished`: of an
    agent no longer live, read from its saved session, as `corral mcp` offers it)."""
    who = "finished agent" if details.get("finished") else "agent"
    head = f"Transcript of {who} {_value(details, 'agent')} (session {_value(details, 'session_id')})"
    if details.get("transcript_truncated"):
        head += "; truncated to its most recent part"
    body = str(details.get("transcript") or "").strip()
    return f"{head}:\n\n{body}" if body else f"{head}: empty."


def render_result(details: Mapping[str, Any]) -> str:
    """The text of a successful action, from its `details`."""
    action = details.get("action")
    agent = _value(details, "agent")
    if action == "list":
        return render_list(details)
    if action == "inspect":
        return render_inspect(details)
    if action == "transcript":
        return render_transcript(details)
    if action in ("delegate", "continue"):
        verb = "Started" if action == "delegate" else "Continued session in"
        skills = details.get("skills")
        with_skills = f" · skills={', '.join(map(str, skills))}" if skills else ""
        text = (
            f"{verb} agent {agent} (definition {_value(details, 'definition')}) · "
            f"session={_value(details, 'session_id')} · request={_value(details, 'request_id')}"
            f"{with_skills}.\n"
            "The task was accepted. Its result will be delivered to you as a message; do not poll."
        )
        if details.get("mcp"):
            from corral.mcp_servers.texts import report_text

            text += f"\n{report_text(details['mcp'])}"
        return text
    if action == "steer":
        return (
            f"Steering accepted by agent {agent} (request={_value(details, 'request_id')}). "
            "It applies at the agent's next safe point; the assignment is unchanged."
        )
    if action == "interrupt":
        return (
            f"Interrupt accepted by agent {agent} (request={_value(details, 'request_id')}). "
            "Its current operation is cancelled and it continues the assignment with your message."
        )
    if action == "reply":
        return (
            f"Reply accepted by agent {agent} (ask={_value(details, 'ask_id')}); it continues its assignment."
        )
    if action == "close":
        text = f"Closed agent {agent}."
        if details.get("cleanup_error"):
            text += f"\nCleanup warning: {details['cleanup_error']}"
        for label, message in (details.get("cleanup_errors") or {}).items():
            text += f"\nCleanup warning ({label}): {message}"
        return text
    return f"agent {action}: done."


TEAMS_TOOL_NAMES: tuple[str, ...] = (
    "spawn_agent",
    "spawn_swarm_agents",
    "get_agent_status",
    "check_teammate",
    "interrupt_teammate",
    "stop_teammate",
    "send_message",
    "read_inbox",
    "report_and_exit",
    "claim_file",
    "release_file",
    "list_file_claims",
)
"""The teams tools, in the lead's order; their errors are named by the tool, with teams next actions."""

_TEAMS_OPERATIONS = frozenset(TEAMS_TOOL_NAMES)


def render_error(error: Mapping[str, Any]) -> str:
    """The text of a failed action: what failed, why, and what to do next."""
    category = _value(error, "category")
    operation = _value(error, "operation")
    subject = (
        operation
        if operation in ("ask_owner", "agent") or operation in _TEAMS_OPERATIONS
        else f"agent {operation}"
    )
    lines = [f"{subject} failed ({category}): {_value(error, 'message')}"]
    details = error.get("details")
    if isinstance(details, Mapping) and isinstance(details.get("reason"), str):
        lines.append(f"reason: {details['reason']}")
    for key in ("primary", "cleanup"):
        part = error.get(key)
        if isinstance(part, Mapping):
            lines.append(f"{key}: {part.get('category')}: {part.get('message')}")
    next_action = error.get("nextAction") or (
        None if operation in _TEAMS_OPERATIONS else DEFAULT_NEXT_ACTIONS.get(category)
    )
    if next_action:
        lines.append(f"Next: {next_action}")
    return "\n".join(lines)
