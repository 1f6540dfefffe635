"""What every wire API's conversion shares, importable without any SDK.

Pi's names for the wire APIs, the default reply cap, the synthetic result of a
tool call that never got one, the removal of text a JSON encoder cannot send
(lone UTF-16 surrogates, from a tool's invalid output or a file written by Pi),
like Pi's `sanitizeSurrogates`, a streamed tool call's arguments read from
their JSON text, and the shape of every conversion: a converter fed message by
message (`MessageFeed`), kept between requests so that only new messages are
converted (`KeptConversion`).
"""

from __future__ import annotations

import json
import re
from typing import Any, Generic, TypeVar

from corral.llm._messages import AgentMessage, AssistantMessage, ToolResultMessage, UserMessage
from corral.llm._model import LlmContext, ModelInfo

__all__ = [
    "DEFAULT_MAX_TOKENS_CAP",
    "NO_RESULT_TEXT",
    "KeptConversion",
    "MessageFeed",
    "continues",
    "parse_arguments",
    "parse_partial_arguments",
    "pi_api_name",
    "sanitize_surrogates",
    "sanitize_value",
]

DEFAULT_MAX_TOKENS_CAP = 32_000
"""`max_tokens` defaults to `min(model.max_tokens, 32000)`."""

NO_RESULT_TEXT = "No result provided"
"""The synthetic result sent for a tool call that never got one."""

_PI_API_NAMES = {
    "openai-responses": "openai-responses",
    "openai-chat": "openai-completions",
    "anthropic": "anthropic-messages",
}


def pi_api_name(info: ModelInfo) -> str:
    """The `api` recorded on assistant messages: Pi's name for the wire API."""
    return _PI_API_NAMES.get(info.api, info.api)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def sanitize_surrogates(text: str) -> str:
    """`text` without lone UTF-16 surrogates (which no JSON encoder can send as UTF-8)."""
    return _LONE_SURROGATE.sub("", text) if _LONE_SURROGATE.search(text) else text


def sanitize_value(value: Any) -> Any:
    """A JSON value with `sanitize_surrogates` applied to every string in it (keys included)."""
    if isinstance(value, str):
        return sanitize_surrogates(value)
    if isinstance(value, dict):
        return {sanitize_surrogates(str(k)): sanitize_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [sanitize_value(item) for item in value]
    return value


def parse_arguments(args: str) -> tuple[dict[str, Any], str | None]:
    """A tool call's arguments object, and the raw text when it is not a JSON object (never silently `{}`)."""
    if not args.strip():
        return {}, None
    try:
        value = json.loads(args)
    except ValueError:
        return {}, args
    return (value, None) if isinstance(value, dict) else ({}, args)


def parse_partial_arguments(text: str, current: dict[str, Any]) -> dict[str, Any]:
    """A streaming tool call's arguments so far: the full JSON once it parses, else the last good value."""
    try:
        value = json.loads(text)
    except ValueError:
        return current
    return value if isinstance(value, dict) else current


def continues(system_prompt: str | None, sources: list[AgentMessage], context: LlmContext) -> bool:
    """Whether `context` is the conversation converted so far (`system_prompt` and the very message
    objects `sources`) with messages appended: then only the new ones need converting."""
    messages = context.messages
    if system_prompt != context.system_prompt or len(messages) < len(sources):
        return False
    return all(ours is theirs for ours, theirs in zip(sources, messages, strict=False))


class MessageFeed:
    """A conversion fed the conversation message by message: each role goes to its own method."""

    def user(self, message: UserMessage) -> None:
        raise NotImplementedError

    def assistant(self, message: AssistantMessage) -> None:
        raise NotImplementedError

    def tool_result(self, message: ToolResultMessage) -> None:
        raise NotImplementedError

    def feed(self, message: AgentMessage) -> None:
        """Convert one more message of the conversation."""
        if isinstance(message, UserMessage):
            self.user(message)
        elif isinstance(message, AssistantMessage):
            self.assistant(message)
        elif isinstance(message, ToolResultMessage):
            self.tool_result(message)
        else:
            # The agent loop converts other roles before a request; anything left is sent as user text.
            text = getattr(message, "content", None) or getattr(message, "summary", None) or ""
            self.user(UserMessage(content=text if isinstance(text, str | list) else str(text)))


Feed = TypeVar("Feed", bound=MessageFeed)
Result = TypeVar("Result")


class KeptConversion(Generic[Feed, Result]):
    """One conversation's wire form, request after request, converting only what is new.

    The agent loop's context only grows between requests; the messages already converted
    keep their wire form. Anything else — a compaction or a branch switch replacing messages,
    another system prompt — is seen by comparing the context with the messages converted last
    time (by identity, in order), and the whole conversation is converted afresh. The result
    is always what a fresh conversion would send. Subclasses make a converter holding the
    system prompt (`_fresh`) and read a request from it (`_request`).
    """

    def __init__(self, info: ModelInfo) -> None:
        self.info = info
        self._system_prompt: str | None = None
        self._sources: list[AgentMessage] = []
        self._converter = self._fresh("")
        self.rebuilds = 0
        """How many times the whole conversation was converted (the first request included)."""

    def _fresh(self, system_prompt: str) -> Feed:
        raise NotImplementedError

    def _request(self, converter: Feed) -> Result:
        raise NotImplementedError

    def convert(self, context: LlmContext) -> Result:
        """The request's wire form for `context`."""
        if not continues(self._system_prompt, self._sources, context):
            self.rebuilds += 1
            self._system_prompt = context.system_prompt
            self._sources = []
            self._converter = self._fresh(context.system_prompt)
        for message in context.messages[len(self._sources) :]:
            self._converter.feed(message)
            self._sources.append(message)
        return self._request(self._converter)
