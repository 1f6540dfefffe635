"""`Caller`: the controller calling an action — the lead or a delegating managed agent."""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from corral.llm import ThinkingLevel
from corral.orchestration.kernel._lifecycle import ControllerKind, ControllerScope

if TYPE_CHECKING:
    from corral.agent import AgentSession

__all__ = ["Caller"]


@dataclass(frozen=True)
class Caller:
    """Who calls a controller action, with what the action needs to know about it."""

    agent: AgentSession
    """The caller's own agent session (results and asks are delivered into it)."""
    _: KW_ONLY
    scope: ControllerKind = "lead"
    """`lead`, or `managed-agent` for a delegating agent."""
    allowed: tuple[str, ...] | None = None
    """A delegating agent's allowlist (`None` for the lead: every definition)."""
    run_id: str | None = None
    """A delegating agent's own generation."""
    label: str | None = None
    """A delegating agent's own label."""
    no_model: str | None = None
    """Set when the caller has no model its agents can inherit (a program lead opened without one):
    the sentence a delegation that needs the caller's model is refused with, in the front end's words."""

    @property
    def session_id(self) -> str:
        """The caller's session id (owner of what it starts)."""
        return self.agent.session.session_id

    @property
    def cwd(self) -> Path:
        """The caller's working directory (relative `cwd` and `files` resolve against it)."""
        return self.agent.cwd

    @property
    def model_ref(self) -> str:
        """The caller's current model as `provider/id` (children inherit it when the definition omits one)."""
        info = self.agent.model.info
        return f"{info.provider}/{info.id}"

    @property
    def inherited_model_ref(self) -> str | None:
        """The model an agent whose definition names none inherits (`None`: the caller has none)."""
        return None if self.no_model is not None else self.model_ref

    @property
    def thinking_level(self) -> ThinkingLevel:
        """The caller's current thinking level (inherited like the model)."""
        return self.agent.thinking_level

    @property
    def controller_scope(self) -> ControllerScope:
        """The scope the lifecycle projection uses."""
        return ControllerScope(self.session_id, kind=self.scope)

    @classmethod
    def lead(cls, agent: AgentSession, *, no_model: str | None = None) -> Caller:
        """The lead controller of `agent` (`no_model`: see the field)."""
        return cls(agent, scope="lead", no_model=no_model)
