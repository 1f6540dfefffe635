"""The request guard: a port the agent loop asks before every model request.

`AgentSession` knows nothing of budgets. Before each model request it asks its
`RequestGuard` (none by default: every request goes out) with an estimate of
the request, and after each reply it tells the guard what the reply used. The
orchestration's budgets feature supplies a guard for managed agents
(`corral.orchestration.budgets`).

The guard answers with a `GuardVerdict`:

* `go` — send the request;
* `notice` — add `text` to the context as a steering notice first (once), then send;
* `final` — the limit is reached: add `text` to the context and send one last
  request, its reply capped at `max_output_tokens` when set; tool calls of that
  reply are not run (each gets an error result saying so) and the run ends;
* `stop` — end the run without a request (the final turn was already taken, or
  the budget cannot cover even a final turn).

A guard that reserves budget for a request in `before_request` settles it in
`after_reply`, which the loop calls for every request that went out, failed
and aborted ones included.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal, Protocol

from corral.llm import AssistantMessage, ModelInfo

__all__ = ["GuardVerdict", "RequestEstimate", "RequestGuard"]

GuardAction = Literal["go", "notice", "final", "stop"]


@dataclass(frozen=True, slots=True)
class RequestEstimate:
    """What the request about to go out is expected to use."""

    model: ModelInfo
    """The model it goes to."""
    input_tokens: int
    """The context's estimate: the last reported usage plus what followed it."""
    output_tokens: int
    """Output expected: the previous reply's output tokens (0 for the first request)."""

    @property
    def tokens(self) -> int:
        """Input plus output."""
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True, slots=True)
class GuardVerdict:
    """The guard's answer before one request."""

    NOTICE_TYPE: ClassVar[str] = "corral-budget-notice"
    """`custom_type` of the notices the loop adds to the context for `notice` and `final`."""

    action: GuardAction
    text: str = ""
    max_output_tokens: int | None = None
    """For `final`: the reply's cap (`StreamOptions.max_tokens`), `None` for the model's own."""
    time_left_ms: int | None = None
    """For `go` and `notice`: how long until a time limit is reached, `None` when none applies. corral's
    loop checks before each request; a runner whose one request can run long (a harness agent's whole
    turn) ends the request when this runs out."""


GO = GuardVerdict("go")


class RequestGuard(Protocol):
    """Asked before every model request of one agent; told about every reply."""

    def before_request(self, estimate: RequestEstimate) -> GuardVerdict:
        """Whether (and how) the request may go out."""
        ...

    def after_reply(self, reply: AssistantMessage, estimate: RequestEstimate) -> None:
        """The reply to a request that went out (its usage, or none reported)."""
        ...
