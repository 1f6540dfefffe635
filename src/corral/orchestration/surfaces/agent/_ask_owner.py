"""The `ask_owner` tool: a managed agent's question to its owner.

Registered on every managed agent. The call must be the only tool call of
its assistant message (and so the final one of the turn); otherwise it is
rejected with an instruction to call it alone. An accepted question ends the
turn (`ToolResult.terminate`): the agent waits for the owner's `reply`, which
arrives as new input.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from corral.agent import AgentTool, ToolResult, ToolUpdate
from corral.llm import AssistantMessage, ToolDefinition
from corral.orchestration.errors import InvalidRequestError
from corral.orchestration.surfaces._common import (
    PASS_THROUGH_SCHEMA,
    OwnerQuestionRecorder,
    error_result,
    field_schema,
)

from ._wire import parse_ask_owner

if TYPE_CHECKING:
    from corral.agent import AgentSession

__all__ = ["ASK_OWNER_SENT_TEXT", "AskOwnerTool", "ask_owner_schema"]

ASK_OWNER_SENT_TEXT = (
    "Question sent to your owner. Stop here and end your turn: the answer arrives as a message "
    "and you then continue the assignment. Do not guess the answer."
)
"""Text of an accepted `ask_owner` call."""

_CALL_ALONE = (
    "ask_owner must be the only tool call of your message. Finish or drop the other tool calls, "
    "then call ask_owner alone as your final action."
)


def ask_owner_schema() -> dict[str, Any]:
    """The JSON schema offered to the model."""
    files = field_schema("files")
    files["description"] = "Evidence files (paths relative to your cwd, or result:<request-id> references)."
    return {
        "type": "object",
        "properties": {"question": field_schema("question"), "files": files},
        "required": ["question"],
        "additionalProperties": False,
    }


class AskOwnerTool(AgentTool):
    """`ask_owner`: ask the owner a question and wait for the reply."""

    name = "ask_owner"
    label = "Ask owner"
    description = (
        "Ask your owner a question you cannot answer yourself (a decision, missing access, an unclear "
        "requirement). Call it alone, as the last tool call of your message; your turn then ends and "
        "the answer arrives as a message. Do not guess instead of asking when the answer matters."
    )
    parameters = PASS_THROUGH_SCHEMA
    prompt_snippet = "ask_owner: ask your owner a question and wait for the answer"

    def __init__(self, controller: OwnerQuestionRecorder, agent_ctx: Any, agent: AgentSession) -> None:
        self._controller = controller
        self._agent_ctx = agent_ctx
        self._agent = agent

    def definition(self) -> ToolDefinition:
        """The tool as offered to the model."""
        return ToolDefinition(name=self.name, description=self.description, parameters=ask_owner_schema())

    def _check_alone(self, call_id: str) -> None:
        for message in reversed(self._agent.messages):
            if isinstance(message, AssistantMessage):
                ids = [call.id for call in message.tool_calls]
                if call_id in ids:
                    if ids != [call_id]:
                        raise InvalidRequestError(_CALL_ALONE, operation="ask_owner")
                    return
        # The assistant message is always in context before its tools run; if it is
        # not, the call cannot be proven to be alone.
        raise InvalidRequestError(_CALL_ALONE, operation="ask_owner")

    async def execute(
        self, call_id: str, params: dict[str, Any], on_update: ToolUpdate | None = None
    ) -> ToolResult:
        """Validate, check the call is alone, hand the question to the controller, end the turn."""
        try:
            parsed = parse_ask_owner(params)
            self._check_alone(call_id)
            outcome = await self._controller.ask_owner(self._agent_ctx, parsed)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return error_result(exc, "ask_owner")
        details = {"askId": outcome.ask_id, "assignmentRequestId": outcome.assignment_request_id}
        return ToolResult([*ToolResult.text(ASK_OWNER_SENT_TEXT).content], details=details, terminate=True)
