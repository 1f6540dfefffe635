"""Message builders shared by the session tests."""

from __future__ import annotations

from pathlib import Path

from corral.llm import (
    AssistantMessage,
    Cost,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)

FIXTURES = Path(__file__).parent / "fixtures"


def user(text: str) -> UserMessage:
    return UserMessage(content=text, timestamp=1_000)


def assistant(
    text: str = "ok",
    *,
    tool_calls: list[ToolCall] | None = None,
    total_tokens: int = 0,
    cost: float = 0.0,
    stop_reason: str = "stop",
    provider: str = "scripted",
    model: str = "m1",
) -> AssistantMessage:
    content: list[TextContent | ToolCall] = [TextContent(text=text)] if text else []
    content.extend(tool_calls or [])
    return AssistantMessage(
        content=content,  # type: ignore[arg-type]
        api="scripted",
        provider=provider,
        model=model,
        usage=Usage(total_tokens=total_tokens, input=total_tokens, cost=Cost(total=cost)),
        stop_reason=stop_reason,  # type: ignore[arg-type]
        timestamp=2_000,
    )


def tool_call(name: str, call_id: str = "call_1", **arguments: object) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=dict(arguments))


def tool_result(text: str, call_id: str = "call_1", name: str = "read") -> ToolResultMessage:
    return ToolResultMessage(
        tool_call_id=call_id, tool_name=name, content=[TextContent(text=text)], timestamp=3_000
    )
