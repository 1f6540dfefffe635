"""What the host tells a model, in corral's words (`HostNoticeText`, the default `HostNotices`).

The host decides when an agent is told (`orchestration/host/notices.py`); only this module says it
in words. Small on purpose: the composition root loads it with every host.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from corral.orchestration.host.notices import HandedOff
    from corral.orchestration.kernel.notices import AskPending, ContextRetired, ResultReady

__all__ = ["HANDOFF_PROMPT", "REMOTE_HANDOFF_PROMPT", "RETIRED_NOTE", "RETIREMENT_TEXT", "HostNoticeText"]

HANDOFF_PROMPT = (
    "You were moved to a terminal pane by your owner; continue the same assignment where you left off."
)
"""The prompt an agent moved into a tmux pane gets in its worker (before any carried-over messages)."""

REMOTE_HANDOFF_PROMPT = (
    "You were moved to another worker by your owner; continue the same assignment where you left off."
)
"""The prompt an agent moved to another worker runtime (Ray) gets there."""


RETIREMENT_TEXT = (
    "Your context is under pressure and this session is now retired. Do not start new work: finish the "
    "current coherent step and end with a self-contained handoff (what is done, what remains, relevant "
    "files) as your final answer."
)
"""The steer an agent gets when its context is compacted at its threshold (`contextRetirement`)."""


RETIRED_NOTE = (
    "Session retired after context pressure. Do not continue this session. For follow-up, delegate a "
    "fresh agent and pass this result/handoff plus the relevant files."
)
"""The last paragraph of a result whose session was retired."""


def _result_header(fact: ResultReady) -> str:
    """`Agent result · agent=… · definition=… · session=… · request=… · status=…` (a seed contract)."""
    generation, result = fact.generation, fact.result
    return (
        f"Agent result · agent={generation.label} · definition={generation.definition} · "
        f"session={generation.session_id} · request={result.request_id} · status={result.status}"
    )


class HostNoticeText:
    """The host's and its children's notices in corral's words."""

    def result_text(self, fact: ResultReady) -> str:
        """The header line (a seed contract: `Agent result · agent=… · definition=… · session=… ·
        request=… · status=…`), the result's head (`Agent failed.` without one), the truncation
        pointer and `RETIRED_NOTE`, separated by blank lines."""
        result = fact.result
        parts = [_result_header(fact), fact.shown if fact.shown is not None else "Agent failed."]
        if fact.truncated:
            parts.append(
                f"[Result truncated; the full text is available as result:{result.request_id} in `files`.]"
            )
        if fact.retired:
            parts.append(RETIRED_NOTE)
        return "\n\n".join(parts)

    def result_reference(self, fact: ResultReady) -> str:
        """The header line, then where the full text is — a completed result is the agent's last reply
        in its session file, and `result:<request id>` in `files` hands it to an agent — and
        `RETIRED_NOTE` when the agent's session was retired."""
        generation, result = fact.generation, fact.result
        handed = f"result:{result.request_id} in `files` hands it to an agent"
        if result.status != "completed":
            where = (
                f"the agent's session file is {generation.session_path}" if generation.session_path else ""
            )
        elif generation.session_path:
            where = f"it is the agent's last reply in {generation.session_path}, and {handed}"
        else:
            where = handed
        parts = [_result_header(fact), f"[Shown in full once already{'; ' + where if where else ''}.]"]
        if fact.retired:
            parts.append(RETIRED_NOTE)
        return "\n\n".join(parts)

    def ask_text(self, fact: AskPending) -> str:
        """`Agent <label> needs your input:`, the question, and how to answer."""
        label = fact.generation.label
        return (
            f"Agent {label} needs your input:\n\n{fact.ask.question}\n\n"
            f"Answer with the agent tool: action reply, agent={label}."
        )

    def context_retired(self, fact: ContextRetired) -> str:
        """`RETIREMENT_TEXT`: finish the current step, end with a self-contained handoff."""
        return RETIREMENT_TEXT

    def handed_off(self, fact: HandedOff) -> str:
        """`HANDOFF_PROMPT` (tmux) or `REMOTE_HANDOFF_PROMPT`, then the carried messages under a heading."""
        prompt = HANDOFF_PROMPT if fact.runtime == "tmux" else REMOTE_HANDOFF_PROMPT
        if fact.carried:
            prompt += "\n\nMessages that arrived while you were being moved:\n\n" + "\n\n".join(fact.carried)
        return prompt
