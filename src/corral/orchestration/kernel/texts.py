"""What the kernel tells a model, in corral's words: one plain function per fact (`notices.py`).

The host delivers a durable result and a pending question to the owner (`_delivery.py`), and a
managed child tells its agent that its session is retired after threshold compaction (`_child.py`);
the functions here turn those facts into the text the model reads. A result's first line is a seed
contract (`Agent result · agent=… · status=…`): tools read it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from corral.orchestration.kernel.notices import AskPending, ContextRetired, ResultReady

__all__ = [
    "RETIRED_NOTE",
    "RETIREMENT_TEXT",
    "ask_text",
    "context_retired",
    "result_reference",
    "result_text",
]

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


def result_text(fact: ResultReady) -> str:
    """The `corral-agent-result` message's content: the header line (a seed contract: `Agent result ·
    agent=… · definition=… · session=… · request=… · status=…`), the result's head (`Agent failed.`
    without one), the truncation pointer and `RETIRED_NOTE`, separated by blank lines."""
    result = fact.result
    parts = [_result_header(fact), fact.shown if fact.shown is not None else "Agent failed."]
    if fact.truncated:
        parts.append(
            f"[Result truncated; the full text is available as result:{result.request_id} in `files`.]"
        )
    if fact.retired:
        parts.append(RETIRED_NOTE)
    return "\n\n".join(parts)


def result_reference(fact: ResultReady) -> str:
    """What stands for a result in the owner's requests once its model replied to it (used only when
    shorter than `result_text`; the session keeps the full message): the header line, then where the
    full text is — a completed result is the agent's last reply in its session file, and
    `result:<request id>` in `files` hands it to an agent — and `RETIRED_NOTE` when the agent's
    session was retired."""
    generation, result = fact.generation, fact.result
    handed = f"result:{result.request_id} in `files` hands it to an agent"
    if result.status != "completed":
        where = f"the agent's session file is {generation.session_path}" if generation.session_path else ""
    elif generation.session_path:
        where = f"it is the agent's last reply in {generation.session_path}, and {handed}"
    else:
        where = handed
    parts = [_result_header(fact), f"[Shown in full once already{'; ' + where if where else ''}.]"]
    if fact.retired:
        parts.append(RETIRED_NOTE)
    return "\n\n".join(parts)


def ask_text(fact: AskPending) -> str:
    """The `corral-agent-ask` message's content: `Agent <label> needs your input:`, the question, and
    how to answer."""
    label = fact.generation.label
    return (
        f"Agent {label} needs your input:\n\n{fact.ask.question}\n\n"
        f"Answer with the agent tool: action reply, agent={label}."
    )


def context_retired(fact: ContextRetired) -> str:
    """The steer a retired session gets: `RETIREMENT_TEXT` (finish the current step, end with a
    self-contained handoff)."""
    return RETIREMENT_TEXT
