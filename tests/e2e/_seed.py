"""Seeding the store and sessions for the CLI tests that read them back."""

from __future__ import annotations

from corral.llm import AssistantMessage, TextContent, UserMessage
from corral.orchestration import NewGeneration, Repositories
from corral.session import SessionManager

from .conftest import Env

__all__ = ["lead_session", "managed_agent"]


def lead_session(env: Env) -> str:
    """A saved lead session in the project (a user prompt and a reply); its id."""
    session = SessionManager.create(env.project, sessions_root=env.home / "sessions")
    session.append_message(UserMessage(content="Split the work."))
    session.append_message(
        AssistantMessage(
            content=[TextContent(text="Delegated.")],
            api="scripted",
            provider="scripted",
            model="m",
            stop_reason="stop",
        )
    )
    session_id = session.session_id
    session.close()
    return session_id


def managed_agent(env: Env, owner: str, label: str, *, lost: bool = False) -> str:
    """A managed `scout` of `owner`, acknowledged (and marked lost); its run id."""
    store = Repositories.open(env.home / "corral.db")
    try:
        generation, task = store.kernel.create_generation(
            NewGeneration(
                definition="scout",
                owner_session_id=owner,
                cwd=str(env.project),
                session_id=f"child-{label}",
                task="Map the repo.",
                label=label,
            )
        )
        store.kernel.record_ack(generation.run_id, task.request_id, accepted=True)
        if lost:
            store.kernel.mark_presence(generation.run_id, "lost")
        return generation.run_id
    finally:
        store.close()
