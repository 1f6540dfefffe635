"""The text the teams tools answer the model, rendered from the teams core's typed results.

The core returns what happened (`teams/results.py`); only this module says it
in words, so the core holds no model-facing prose for tool results. The notices the core sends on
its own (a queued agent that could not start, the recovery prompt, a fallback report, ...) are facts
(`teams/notices.py`) worded by `teams/texts.py`'s plain functions, which the core calls itself.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from corral.orchestration.teams.repair.texts import receipt_text
from corral.orchestration.teams.results import (
    AgentSnapshot,
    ClaimResult,
    ClaimsList,
    FailedSnapshot,
    InboxResult,
    InterruptResult,
    MemberSnapshot,
    MessageSent,
    QueuedSnapshot,
    ReleaseResult,
    ReportFacts,
    ReportReceipt,
    SpawnResult,
    StatusSnapshot,
    StopResult,
    SwarmFailure,
    SwarmResult,
    TeammateHealth,
    Teardown,
)
from corral.orchestration.teams.texts import outcome_label

if TYPE_CHECKING:
    from corral.orchestration.teams.repair.records import RepairRequest

__all__ = [
    "agent_snapshot_details",
    "claim_details",
    "claims_details",
    "health_details",
    "inbox_details",
    "interrupt_details",
    "message_sent_details",
    "receipt_details",
    "release_details",
    "render_claim",
    "render_claims",
    "render_health",
    "render_inbox",
    "render_interrupt",
    "render_message_sent",
    "render_receipt",
    "render_release",
    "render_spawn",
    "render_status",
    "render_stop",
    "render_swarm",
    "report_facts_details",
    "spawn_details",
    "status_details",
    "stop_details",
    "swarm_details",
]


def render_spawn(result: SpawnResult) -> str:
    """`spawn_agent`'s text: started (with the read sandbox's state) or queued (with its position)."""
    if result.queued:
        usage = "" if result.capacity is None else f"; capacity is {result.capacity[0]}/{result.capacity[1]}"
        return (
            f"Agent {result.name} queued at position {result.queue_position}{usage}. It starts when a slot "
            "frees; its report arrives automatically."
        )
    text = (
        f"Agent {result.name} started ({result.role}, {result.mode}, {result.model_slot} on {result.model})."
    )
    if result.sandbox == "instruction" and result.sandbox_off:
        text += " Read-only is an instruction only: the read sandbox is turned off (teams.read_sandbox)."
    elif result.sandbox == "instruction":
        text += (
            " The read-only sandbox is not available here, so read-only is an instruction only "
            "(run `corral doctor`)."
        )
    text += " Its report arrives automatically as a new turn; end your turn to wait."
    if result.mcp is not None and result.mcp.servers:
        from corral.mcp_servers.texts import report_text

        text += f"\n{report_text(result.mcp.to_details())}"
    return text


def spawn_details(result: SpawnResult) -> dict[str, Any]:
    """`spawn_agent`'s JSON details (also each started member of a swarm, and a programmatic launch)."""
    details: dict[str, Any] = {
        "agentId": f"{result.name}@{result.session}",
        "name": result.name,
        "session": result.session,
        "role": result.role,
        "requestedRole": result.role,
        "resolvedRole": result.role,
        "requestedModelSlot": result.requested_slot,
        "modelSlot": result.model_slot,
        "model": result.model,
        "thinking": result.thinking,
        "modelSource": result.model_source,
        "mode": result.mode,
        "terminalId": None,
        "queued": result.queued,
        "queueId": result.queue_id,
        "queuePosition": result.queue_position,
        "sessionContext": result.session_context,
        "sessionContextAvailable": result.session_context_available,
        "cwd": result.cwd,
    }
    if result.run_id is not None:
        details["runId"] = result.run_id
    if result.sandbox is not None:
        details["sandbox"] = result.sandbox
    if result.metadata is not None:
        details["metadata"] = result.metadata
    if result.parent is not None:
        details["parent"] = result.parent
    if result.mcp is not None and result.mcp.servers:
        details["mcp"] = result.mcp.to_details()
    return details


def _member_line(member: SpawnResult | SwarmFailure) -> str:
    if isinstance(member, SwarmFailure):
        return f"- {member.name}: failed — {member.error}"
    where = f"queued at position {member.queue_position}" if member.queued else "started"
    line = f"- {member.name}: {member.role}, {member.mode}, {where}"
    if member.mcp is not None and member.mcp.servers:
        from corral.mcp_servers.texts import report_brief

        line += f"; {report_brief(member.mcp.to_details())}"
    return line


def render_swarm(result: SwarmResult) -> str:
    """`spawn_swarm_agents`' text: one line per member, the completion group, what to do next."""
    started = sum(isinstance(member, SpawnResult) for member in result.members)
    text = f"Spawned {started}/{len(result.members)} agents in the current session.\n" + "\n".join(
        _member_line(member) for member in result.members
    )
    if result.completion_group is not None:
        group_id, delivery = result.completion_group
        when = "once every member settled" if delivery == "all-settled" else "as each member settles"
        text += f"\nCompletion group {group_id}: compact indexes arrive {when} (urgent results early)."
    if result.failed:
        return text + "\nNo agent was started: fix the errors above and call spawn_swarm_agents again."
    return text + "\nReports arrive automatically as new turns; end your turn to wait."


def swarm_details(result: SwarmResult) -> dict[str, Any]:
    """`spawn_swarm_agents`' JSON details: each member's spawn details, the failures, the completion group."""
    details: dict[str, Any] = {
        "session": result.session,
        "spawned": [spawn_details(member) for member in result.members if isinstance(member, SpawnResult)],
        "failed": [
            {"name": member.name, "error": member.error, "category": member.category}
            for member in result.members
            if isinstance(member, SwarmFailure)
        ],
    }
    if result.completion_group is not None:
        group_id, delivery = result.completion_group
        details["completionGroup"] = {"groupId": group_id, "delivery": delivery}
    if result.category is not None:
        # Every member failed: the call failed, with the error object every failed tool call has.
        first = next(member for member in result.members if isinstance(member, SwarmFailure))
        count = len(result.members)
        details["ok"] = False
        details["error"] = {
            "category": result.category,
            "message": f"No agent was started: {count} of {count} members failed; {first.name}: {first.error}",
            "operation": "spawn_swarm_agents",
            "rollbackOccurred": False,
            "retryAttempted": False,
            "nextAction": "Fix the errors the result names and call spawn_swarm_agents again.",
        }
    return details


def render_receipt(receipt: ReportReceipt) -> str:
    """`report_and_exit`'s answer to the agent: accepted (stop now), a repair is due, or a duplicate."""
    if receipt.kind == "duplicate":
        return "A final report was already accepted for this run. This duplicate was ignored; finish immediately."
    if receipt.kind == "repair":
        assert receipt.decision is not None  # a repair is only ever requested by a verification
        return (
            "Report not accepted yet: an assigned check failed and a repair attempt is available.\n"
            f"{receipt_text(receipt.decision)}\n"
            "Fix the cause within your assignment's scope, then call report_and_exit again. If you cannot "
            '(e.g. the fix needs edits a read agent may not make), report with outcome "blocked".'
        )
    assert receipt.report is not None, "an accepted receipt carries its report"
    return f"Report accepted ({receipt.report.report_id}). Your work is over: stop now. The lead decides acceptance."


def receipt_details(receipt: ReportReceipt) -> dict[str, Any]:
    """`report_and_exit`'s JSON details."""
    decision = receipt.decision
    if receipt.kind == "duplicate":
        return {"accepted": False, "duplicate": True}
    if receipt.kind == "repair":
        assert decision is not None, "a repair is only ever requested by a verification"
        return {
            "accepted": False,
            "repairRequest": _repair_request_details(decision.repair_request),
            "verification": decision.verification.to_json(),
            "repair": None if decision.repair is None else decision.repair.to_json(),
        }
    assert receipt.report is not None, "an accepted receipt carries its report"
    details: dict[str, Any] = {
        "accepted": True,
        "reportId": receipt.report.report_id,
        "taskId": receipt.report.task_id,
        "runId": receipt.report.run_id,
        "deliveryOutcome": "none",
        "cancelledDeliveries": 0,
    }
    if decision is not None:
        details["verification"] = decision.verification.to_json()
        if decision.repair is not None:
            details["repair"] = decision.repair.to_json()
    return details


def _repair_request_details(request: RepairRequest | None) -> dict[str, Any] | None:
    """`{id, attempt, checks: [{checkId, name, state, exitCode, logPath, error?}]}`."""
    if request is None:
        return None
    checks: list[dict[str, Any]] = []
    for check in request.checks:
        item: dict[str, Any] = {
            "checkId": check.check_id,
            "name": check.name,
            "state": check.state,
            "exitCode": check.exit_code,
            "logPath": check.log_path,
        }
        if check.error is not None:
            item["error"] = check.error
        checks.append(item)
    return {"id": request.id, "attempt": request.attempt, "checks": checks}


def render_message_sent(result: MessageSent) -> str:
    """`send_message`'s text."""
    return f"Message sent to {result.recipient}."


def message_sent_details(result: MessageSent) -> dict[str, Any]:
    """`send_message`'s JSON details."""
    return {"session": result.session, "recipient": result.recipient, "delivery": result.delivery}


def render_inbox(result: InboxResult) -> str:
    """`read_inbox`'s text: each message with its time (UTC), sender and label, or that there are none."""
    if not result.messages:
        return f"No {'unread ' if result.unread_only else ''}messages for {result.target}."
    lines = [f"{len(result.messages)} message(s) for {result.target}:"]
    for message in result.messages:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(message.created_at / 1000))
        lines.append(f"\n[{stamp}] from {message.sender} — {message.summary or 'Message'}\n{message.content}")
    return "\n".join(lines)


def render_claim(result: ClaimResult) -> str:
    """`claim_file`'s text: what was claimed, or who holds what (nothing is claimed then)."""
    if result.conflicts:
        held = ", ".join(f"{path} (held by {holder})" for path, holder in result.conflicts)
        return f"No files claimed: {held}. Coordinate with the holder or the lead."
    return "Claimed: " + ", ".join(result.granted) + "."


def inbox_details(result: InboxResult) -> dict[str, Any]:
    """`read_inbox`'s JSON details."""
    return {
        "session": result.session,
        "targetAgent": result.target,
        "messages": [
            {
                "id": m.message_id,
                "from": m.sender,
                "text": m.content,
                "summary": m.summary,
                "timestamp": m.created_at,
                "read": m.read_at is not None,
            }
            for m in result.messages
        ],
        "markAsRead": result.mark_as_read,
    }


def claim_details(result: ClaimResult) -> dict[str, Any]:
    """`claim_file`'s JSON details."""
    return {
        "agent": result.agent,
        "session": result.session,
        "granted": list(result.granted),
        "conflicts": [{"path": path, "heldBy": holder} for path, holder in result.conflicts],
    }


def render_release(result: ReleaseResult) -> str:
    """`release_file`'s text."""
    if result.released:
        return "Released: " + ", ".join(result.released) + "."
    return "None of those paths were claimed by you."


def release_details(result: ReleaseResult) -> dict[str, Any]:
    """`release_file`'s JSON details."""
    return {"released": list(result.released)}


def render_claims(result: ClaimsList) -> str:
    """`list_file_claims`' text."""
    if not result.claims:
        return "No file claims."
    return "File claims:\n" + "\n".join(f"- {claim.path}: {claim.agent}" for claim in result.claims)


def claims_details(result: ClaimsList) -> dict[str, Any]:
    """`list_file_claims`' JSON details."""
    return {"claims": [{"path": c.path, "agent": c.agent, "since": c.since} for c in result.claims]}


def render_stop(result: StopResult) -> str:
    """`stop_teammate`'s text."""
    name = result.name
    if result.outcome == "cancelled-queued":
        return f"Cancelled queued agent {name} before it started."
    if result.outcome == "not-active":
        return f"Agent {name} is not active in this session."
    if result.outcome == "reported":
        return f"Agent {name} already reported; its report is being delivered, so there is nothing to stop."
    if result.outcome == "stopped":
        return f"Stopped agent {name}" + (f": {result.reason}" if result.reason else ".")
    return (
        f"Agent {name} is inactive but {result.outcome}; lifecycle cleanup did not complete: {result.error}"
    )


def _teardown_details(teardown: Teardown) -> dict[str, Any]:
    if teardown.status == "settled":
        return {
            "stopped": True,
            "teardown": {
                "status": "settled",
                "reason": teardown.reason,
                "finalized": True,
                "removedMember": True,
            },
            "releasedClaims": list(teardown.released_claims),
        }
    details: dict[str, Any] = {"stopped": False, "blocked": True}
    if teardown.quarantined:
        details["quarantined"] = True
    return details | {
        "teardown": {"status": teardown.status, "reason": teardown.reason},
        "error": teardown.error,
    }


def stop_details(result: StopResult) -> dict[str, Any]:
    """`stop_teammate`'s JSON details."""
    if result.outcome == "cancelled-queued":
        return {"session": result.session, "stopped": True, "queued": True}
    if result.outcome in ("not-active", "reported"):
        return {"session": result.session, "stopped": False, "reason": result.outcome}
    assert result.teardown is not None, "a stopped agent has a teardown"
    return _teardown_details(result.teardown) | {"session": result.session}


def render_interrupt(result: InterruptResult) -> str:
    """`interrupt_teammate`'s text."""
    name = result.name
    texts = {
        "tmux": f"Agent {name} runs in a tmux pane, where interrupt is not supported; use send_message or "
        "stop_teammate.",
        "not_found": f"Agent {name} is not active in this session.",
        "closing": f"Agent {name} is closing; nothing to interrupt.",
        "interrupted": f"Interrupted agent {name}. It keeps its session, task and claims and waits for your "
        "message (send_message) before it continues.",
        "pending": f"Interrupt of {name} sent; cancellation is cooperative and still pending.",
        "no_command": f"Agent {name} has no running tool or model call to interrupt.",
    }
    return texts[result.status]


def interrupt_details(result: InterruptResult) -> dict[str, Any]:
    """`interrupt_teammate`'s JSON details."""
    details: dict[str, Any] = {"session": result.session, "agentName": result.name}
    if result.status == "tmux":
        return {**details, "status": "unsupported", "reason": "tmux-runtime"}
    if result.status == "not_found":
        return {**details, "status": "not_found"}
    details.update(agentKind=result.agent_kind, lifecycleRunId=result.run_id, mechanism="agent-session-abort")
    if result.status == "closing":
        return {**details, "status": "unsupported", "reason": "lifecycle-closing"}
    return {**details, "status": result.status}


_STATUS_FOOTER = (
    "Reports arrive automatically as new turns. End this turn to wait. Use get_agent_status once for a "
    "current snapshot; do not poll."
)


def report_facts_details(facts: ReportFacts) -> dict[str, Any]:
    """A report's facts as `get_agent_status` and `check_teammate` show them (camelCase, repair when repaired)."""
    details: dict[str, Any] = {
        "taskId": facts.task_id,
        "reportId": facts.report_id,
        "outcome": facts.outcome,
        "effectiveOutcome": facts.effective_outcome,
        "verification": facts.verification.to_json(),
        "acceptance": {
            "state": facts.acceptance,
            **({"reason": facts.acceptance_reason} if facts.acceptance_reason else {}),
        },
        "summary": facts.summary,
        "reportStatus": facts.report_status,
    }
    if facts.repair is not None:
        details["repair"] = facts.repair.to_json()
    return details


def _member_details(snapshot: MemberSnapshot) -> dict[str, Any]:
    details: dict[str, Any] = {
        "name": snapshot.name,
        "role": snapshot.role,
        "modelSlot": snapshot.model_slot,
        "model": snapshot.model,
        "runId": snapshot.run_id,
    }
    if snapshot.in_pane:
        details["paneId"] = snapshot.pane_id
    if snapshot.error is not None:
        details["error"] = snapshot.error
    if snapshot.live:
        if snapshot.activity_age_ms is not None:
            details["activityAgeMs"] = snapshot.activity_age_ms
        details["activeTool"] = snapshot.active_tool
    if snapshot.rate_limit is not None:
        details["rateLimit"] = snapshot.rate_limit
    if snapshot.awaiting_message:
        details["progress"] = _AWAITING_MESSAGE
    details["phase"] = snapshot.phase
    if snapshot.report is not None:
        details.update(report_facts_details(snapshot.report))
    details.update(snapshot.fields)
    return details


_AWAITING_MESSAGE = "interrupted; waiting for a message"


def agent_snapshot_details(snapshot: AgentSnapshot) -> dict[str, Any]:
    """One agent of `get_agent_status`' details (`name`, `role`, `phase`, … in the contract's order)."""
    if isinstance(snapshot, MemberSnapshot):
        return _member_details(snapshot)
    if isinstance(snapshot, QueuedSnapshot):
        return {
            "name": snapshot.name,
            "role": snapshot.role,
            "modelSlot": snapshot.model_slot,
            "phase": snapshot.phase,
            "queuePosition": snapshot.queue_position,
            "queuedAgeMs": snapshot.queued_age_ms,
        }
    if isinstance(snapshot, FailedSnapshot):
        return {
            "name": snapshot.name,
            "role": snapshot.role,
            "phase": snapshot.phase,
            "error": snapshot.error,
            "completedAgeMs": snapshot.completed_age_ms,
        }
    details: dict[str, Any] = {
        "name": snapshot.name,
        "role": snapshot.role,
        "modelSlot": snapshot.model_slot,
        "phase": snapshot.phase,
        "runId": snapshot.run_id,
        "completedAgeMs": snapshot.completed_age_ms,
        **report_facts_details(snapshot.report),
    }
    details.update(snapshot.fields)
    return details


def status_details(result: StatusSnapshot) -> dict[str, Any]:
    """`get_agent_status`' JSON details: the team and each agent's snapshot."""
    return {"session": result.session, "agents": [agent_snapshot_details(agent) for agent in result.agents]}


def _render_snapshot(snapshot: AgentSnapshot) -> str:
    lines = [f"{snapshot.name}: {snapshot.phase} ({snapshot.role})"]
    report = None if isinstance(snapshot, (QueuedSnapshot, FailedSnapshot)) else snapshot.report
    error = snapshot.error if isinstance(snapshot, (MemberSnapshot, FailedSnapshot)) else None
    if isinstance(snapshot, MemberSnapshot):
        if snapshot.awaiting_message:
            lines.append(f"  progress: {_AWAITING_MESSAGE}")
        if snapshot.live and snapshot.active_tool:
            lines.append(f"  tool: {snapshot.active_tool}")
        if snapshot.rate_limit:
            lines.append(f"  {snapshot.rate_limit}")
        if snapshot.live and snapshot.activity_age_ms is not None:
            lines.append(f"  last activity: {snapshot.activity_age_ms // 1000}s ago")
    if isinstance(snapshot, QueuedSnapshot) and snapshot.queue_position is not None:
        lines.append(f"  queue position: {snapshot.queue_position}")
    if report is not None:
        outcome = outcome_label(report.outcome, report.effective_outcome)
        lines.append(
            f"  task: {outcome}; verification: {report.verification_state}; acceptance: {report.acceptance}"
        )
        if report.summary:
            lines.append(f"  summary: {report.summary}")
    if error:
        lines.append(f"  error: {error}")
    return "\n".join(lines)


def render_status(result: StatusSnapshot) -> str:
    """`get_agent_status`' text: one block per agent, then the reminder not to poll."""
    if not result.agents:
        return "No agents in this session yet. " + _STATUS_FOOTER
    return "\n\n".join(_render_snapshot(snapshot) for snapshot in result.agents) + "\n\n" + _STATUS_FOOTER


def render_health(result: TeammateHealth) -> str:
    """`check_teammate`'s text: the live agent's health, or the report an agent that left stored."""
    report = result.report
    if report is not None:
        where = f"{report.report_id}{', ' + report.markdown_path if report.markdown_path else ''}"
        return (
            f"Agent {result.name} is no longer running. Its latest report, recovered from the store "
            f"({where}):\n\n{report.content}"
        )
    return f"Agent {result.name}: {result.health}" + (f" ({result.error})" if result.error else "") + "."


def health_details(result: TeammateHealth) -> dict[str, Any]:
    """`check_teammate`'s JSON details: the live agent's health, or the report (and checks) it left."""
    report = result.report
    if report is not None:
        assert result.facts is not None, "an agent that left carries its report's facts"
        return {
            "agentName": result.name,
            "alive": False,
            "health": report.status,
            "removedMember": True,
            "completedReport": report_facts_details(result.facts) | {"report": report.content},
            "reportPath": report.markdown_path,
            "checks": [
                {
                    "checkId": check.check_id,
                    "name": check.assignment.name,
                    "state": check.state,
                    "exitCode": check.exit_code,
                    "logPath": check.log_path,
                }
                for check in result.checks
            ],
        }
    details: dict[str, Any] = {
        "agentName": result.name,
        "alive": result.alive,
        "unreadCount": result.unread,
        "health": result.health,
        "agentLoopReady": result.loop_ready,
        "runId": result.run_id,
        "phase": result.phase,
    }
    if result.error is not None:
        details["error"] = result.error
    return details
