"""What every wire API's conversion shares, importable without any SDK.

Pi's names for the wire APIs, the default reply cap, the synthetic result of a
tool call that never got one, the removal of text a JSON encoder cannot send
(lone UTF-16 surrogates, from a tool's invalid output or a file written by Pi),
like Pi's `sanitizeSurrogates`, and a streamed tool call's arguments read from
their JSON text.
"""

from __future__ import annotations

import json
import re
from typing import Any

from corral.llm._messages import AgentMessage
from corral.llm._model import LlmContext, ModelInfo

__all__ = [
    "DEFAULT_MAX_TOKENS_CAP",
    "NO_RESULT_TEXT",
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
