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

__all__ = ["RETIRED_NOTE", "RETIREMENT_TEXT", "ask_text", "context_retired", "result_text"]

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


def result_text(fact: ResultReady) -> str:
    """The `corral-agent-result` message's content: the header line (a seed contract: `Agent result ·
    agent=… · definition=… · session=… · request=… · status=…`), the result's head (`Agent failed.`
    without one), the truncation pointer and `RETIRED_NOTE`, separated by blank lines."""
    generation, result = fact.generation, fact.result
    header = (
        f"Agent result · agent={generation.label} · definition={generation.definition} · "
        f"session={generation.session_id} · request={result.request_id} · status={result.status}"
    )
    parts = [header, fact.shown if fact.shown is not None else "Agent failed."]
    if fact.truncated:
        parts.append(
            f"[Result truncated; the full text is available as result:{result.request_id} in `files`.]"
        )
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
