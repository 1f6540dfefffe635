"""The scripted model: deterministic replies from a script file.

`scripted/<name>` streams like a real provider (start, thinking, text and
tool-call events, then done or error) but takes each reply from the next step
of a script (see `_script_format` and the contract in the docs).

**Cursor.** Each session has its own position in its list of steps. The
model keeps no state between requests: every assistant message it produces
(errors included) carries two extra fields, `scriptCursor` (the position of
the next step) and `scriptList` (`steps`, `agents.<name>` or `agents.*`).
They are persisted with the message, and the next request reads them from
`StreamOptions.previous_response`, so a continued session goes on where it
stopped and a fork continues from its fork point. A missing cursor, or one
written for another list, starts at the first step.

A step is consumed when it is answered, including `stop: error` steps (so a
retry gets the next step). A failed expectation, a missing template value or
an exhausted list does not move the cursor: a retry meets the same failure.

**Events.** `start` comes first, then the step's `delay_ms` (a cancellable
`asyncio.sleep`: cancelling the consuming task ends the request at once), then
the thinking block, the text block and each tool call, each as
start/delta/end with a few deltas, and finally `done` (`toolUse` when the
step has tool calls, else `stop`). A `stop: error` step, a failed expectation
or a missing template value ends with an `error` event instead. Thinking is
streamed whatever the requested thinking level.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import math
import os
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ._cost import calculate_cost, usage_with_total
from ._errors import ScriptError
from ._messages import (
    AgentMessage,
    AssistantContent,
    AssistantMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    now_ms,
)
from ._model import (
    AssistantMessageEvent,
    DoneEvent,
    ErrorEvent,
    LlmContext,
    Model,
    ModelInfo,
    StartEvent,
    StreamOptions,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
)
from ._script_format import TEMPLATE_RE, Script, ScriptStep, find_script, load_script_file, parse_template

__all__ = ["RETRYABLE_ERROR_PREFIX", "SCRIPT_CURSOR_FIELD", "SCRIPT_LIST_FIELD", "ScriptedModel"]

SCRIPT_CURSOR_FIELD = "scriptCursor"
"""Extra field on the scripted model's assistant messages: position of the next step."""
SCRIPT_LIST_FIELD = "scriptList"
"""Extra field on the scripted model's assistant messages: which list the cursor points into."""
RETRYABLE_ERROR_PREFIX = "503 service unavailable: "
"""Prepended to the message of a `stop: error` step with `error_retryable: true`."""

_SHOW_LIMIT = 500
_IMAGE_CHARS = 4800


class _RequestFailure(Exception):
    """A request the script cannot answer (failed expectation, missing template value)."""


def _show(value: str) -> str:
    """A value quoted on one line, cut to 500 characters."""
    if len(value) > _SHOW_LIMIT:
        value = value[:_SHOW_LIMIT] + "…"
    return json.dumps(value, ensure_ascii=False)


def _window(text: str, needle: str) -> str:
    """The part of `text` around `needle`, at most 500 characters."""
    if len(text) <= _SHOW_LIMIT:
        return text
    start = max(0, text.find(needle) - (_SHOW_LIMIT - len(needle)) // 2)
    return text[start : start + _SHOW_LIMIT]


def _content_text(content: str | Sequence[Any]) -> str:
    if isinstance(content, str):
        return content
    return "".join(block.text for block in content if isinstance(block, TextContent))


def _message_texts(message: AgentMessage) -> list[str]:
    """What `context_contains`/`context_excludes` look at in one message."""
    if isinstance(message, UserMessage | CustomMessage | ToolResultMessage):
        return [_content_text(message.content)]
    if isinstance(message, AssistantMessage):
        texts = [block.text for block in message.content if isinstance(block, TextContent)]
        texts.extend(json.dumps(call.arguments, ensure_ascii=False) for call in message.tool_calls)
        return texts
    if isinstance(message, BranchSummaryMessage | CompactionSummaryMessage):
        return [message.summary]
    return []


def _message_chars(message: AgentMessage) -> int:
    """Characters of a message as the token estimate counts them (images as 4800)."""
    content: Any = getattr(message, "content", None)
    chars = 0
    if isinstance(content, str):
        chars += len(content)
    elif isinstance(content, list):
        for block in content:
            if isinstance(block, TextContent):
                chars += len(block.text)
            elif isinstance(block, ThinkingContent):
                chars += len(block.thinking)
            elif isinstance(block, ToolCall):
                chars += len(block.name) + len(json.dumps(block.arguments, ensure_ascii=False))
            elif isinstance(block, ImageContent):
                chars += _IMAGE_CHARS
    for name in ("summary", "command", "output"):
        value = getattr(message, name, None)
        if isinstance(value, str):
            chars += len(value)
    return chars


def _estimate_tokens(chars: int) -> int:
    return math.ceil(chars / 4)


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def _chunks(text: str, pieces: int = 4) -> list[str]:
    """Split text into a few deltas, at word boundaries where possible."""
    if not text:
        return []
    size = max(1, math.ceil(len(text) / pieces))
    chunks: list[str] = []
    start = 0
    while start < len(text):
        end = min(len(text), start + size)
        if end < len(text):
            space = text.find(" ", end)
            if space != -1 and space - end < size:
                end = space + 1
        chunks.append(text[start:end])
        start = end
    return chunks


@dataclasses.dataclass
class _Reply:
    """What one request gets, decided before anything is streamed."""

    step: ScriptStep | None
    list_key: str
    next_cursor: int
    error: str | None = None
    text: str | None = None
    tool_calls: list[ToolCall] = dataclasses.field(default_factory=list)


class ScriptedModel(Model):
    """A model whose replies come from a script file (`scripted/<name>`).

    Args:
        info: The registry entry (`api` `scripted`; `id` is the script name).
        cwd: Where to look for `.corral/scripts/` when a request's
            `StreamOptions.cwd` is not set (default: the current directory).
        environ: Where `CORRAL_SCRIPTS` and `{{ env.NAME }}` are read
            (default `os.environ`).
    """

    def __init__(
        self, info: ModelInfo, *, cwd: Path | None = None, environ: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(info)
        self._cwd = cwd
        self._environ: Mapping[str, str] = os.environ if environ is None else environ
        self._cache: dict[Path, tuple[tuple[int, int], Script]] = {}

    @property
    def script_name(self) -> str:
        """The script's name: the model id."""
        return self.info.id

    def find_script(self, cwd: Path | None = None) -> Path:
        """The script file this model would use for a session in `cwd`.

        Raises:
            ScriptError: the name is refused or no file is found.
        """
        return find_script(self.script_name, cwd=self._base_dir(cwd), environ=self._environ)

    def load_script(self, cwd: Path | None = None) -> Script:
        """Find, read and validate the script (cached while the file is unchanged).

        Raises:
            ScriptError: the script is missing or malformed.
        """
        path = self.find_script(cwd)
        try:
            stat = path.stat()
        except OSError as exc:
            raise ScriptError(f"{path}: cannot read script: {exc.strerror or exc}", path=path) from None
        key = (stat.st_mtime_ns, stat.st_size)
        cached = self._cache.get(path)
        if cached is not None and cached[0] == key:
            return cached[1]
        script = load_script_file(path)
        self._cache[path] = (key, script)
        return script

    def _base_dir(self, cwd: Path | None) -> Path:
        return cwd or self._cwd or Path.cwd()

    # --- streaming ------------------------------------------------------------

    async def stream(
        self, context: LlmContext, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        """Stream the next step's reply (see the module docstring for the cursor rules)."""
        previous = self._previous(context, options)
        timestamp = now_ms()
        try:
            script = self.load_script(options.cwd)
        except ScriptError as exc:
            cursor, list_key = previous if previous is not None else (0, "steps")
            yield self._error_event(str(exc), cursor, list_key, timestamp)
            return
        reply = self._decide(script, context, options, previous)
        if reply.step is None or reply.error is not None:
            yield self._error_event(reply.error or "", reply.next_cursor, reply.list_key, timestamp)
            return
        step = reply.step
        extra = {SCRIPT_CURSOR_FIELD: reply.next_cursor, SCRIPT_LIST_FIELD: reply.list_key}
        content: list[AssistantContent] = []

        def snapshot() -> AssistantMessage:
            return self._message(content, timestamp, extra)

        yield StartEvent(partial=snapshot())
        await asyncio.sleep(step.delay_ms / 1000)
        if step.stop == "error":
            message = reply.text or ""
            if step.error_retryable:
                message = RETRYABLE_ERROR_PREFIX + message
            yield self._error_event(message, reply.next_cursor, reply.list_key, timestamp)
            return
        for event in self._content_events(step, reply, content, snapshot):
            yield event
        usage = self._usage(step, context, content)
        done = self._message(
            content, timestamp, extra, usage=usage, stop_reason="toolUse" if reply.tool_calls else "stop"
        )
        yield DoneEvent(reason="toolUse" if reply.tool_calls else "stop", message=done)

    def _content_events(
        self,
        step: ScriptStep,
        reply: _Reply,
        content: list[AssistantContent],
        snapshot: Callable[[], AssistantMessage],
    ) -> Iterator[AssistantMessageEvent]:
        if step.thinking is not None:
            index = len(content)
            block = ThinkingContent(thinking="")
            content.append(block)
            yield ThinkingStartEvent(content_index=index, partial=snapshot())
            for delta in _chunks(step.thinking):
                block.thinking += delta
                yield ThinkingDeltaEvent(content_index=index, delta=delta, partial=snapshot())
            yield ThinkingEndEvent(content_index=index, content=step.thinking, partial=snapshot())
        if reply.text is not None:
            index = len(content)
            text_block = TextContent(text="")
            content.append(text_block)
            yield TextStartEvent(content_index=index, partial=snapshot())
            for delta in _chunks(reply.text):
                text_block.text += delta
                yield TextDeltaEvent(content_index=index, delta=delta, partial=snapshot())
            yield TextEndEvent(content_index=index, content=reply.text, partial=snapshot())
        for call in reply.tool_calls:
            index = len(content)
            partial_call = ToolCall(id=call.id, name=call.name, arguments={})
            content.append(partial_call)
            yield ToolCallStartEvent(content_index=index, partial=snapshot())
            for delta in _chunks(json.dumps(call.arguments, ensure_ascii=False), pieces=3):
                yield ToolCallDeltaEvent(content_index=index, delta=delta, partial=snapshot())
            content[index] = call
            yield ToolCallEndEvent(
                content_index=index, tool_call=call.model_copy(deep=True), partial=snapshot()
            )

    # --- deciding the reply ------------------------------------------------------

    def _previous(self, context: LlmContext, options: StreamOptions) -> tuple[int, str] | None:
        candidates: list[AssistantMessage] = []
        if options.previous_response is not None:
            candidates.append(options.previous_response)
        else:
            candidates.extend(m for m in reversed(context.messages) if isinstance(m, AssistantMessage))
        for message in candidates:
            if message.provider != "scripted" or message.model != self.info.id:
                continue
            extra = message.model_extra or {}
            cursor, list_key = extra.get(SCRIPT_CURSOR_FIELD), extra.get(SCRIPT_LIST_FIELD)
            if (
                isinstance(cursor, int)
                and not isinstance(cursor, bool)
                and cursor >= 0
                and isinstance(list_key, str)
            ):
                return cursor, list_key
            return None
        return None

    def _decide(
        self, script: Script, context: LlmContext, options: StreamOptions, previous: tuple[int, str] | None
    ) -> _Reply:
        list_key, steps = script.select(options.agent_name)
        cursor = previous[0] if previous is not None and previous[1] == list_key else 0
        label = f"scripted/{self.script_name} {list_key}"
        if cursor >= len(steps):
            if script.on_exhausted == "error":
                return _Reply(
                    None,
                    list_key,
                    cursor,
                    error=f"{label}: all {len(steps)} steps have been used (on_exhausted: error)",
                )
            index = len(steps) - 1
        else:
            index = cursor
        step = steps[index]
        where = f"{label}[{index}]"
        try:
            # A failed expectation falls through to the step's `otherwise` (if any), which
            # answers in its place; without one the request fails.
            while step.expect is not None:
                try:
                    _check_expectations(step, context)
                except _RequestFailure:
                    if step.otherwise is None:
                        raise
                    step = step.otherwise
                    where += ".otherwise"
                    continue
                break
            text = self._render_text(step.text, context) if step.text is not None else None
            calls = self._tool_calls(step, context, cursor, list_key, options.session_id)
        except _RequestFailure as exc:
            return _Reply(step, list_key, cursor, error=f"{where}: {exc}")
        return _Reply(step, list_key, cursor + 1, text=text, tool_calls=calls)

    def _tool_calls(
        self, step: ScriptStep, context: LlmContext, cursor: int, list_key: str, session_id: str | None
    ) -> list[ToolCall]:
        calls: list[ToolCall] = []
        digest = hashlib.sha256(f"{session_id or ''}|{list_key}".encode()).hexdigest()[:8]
        for index, call in enumerate(step.tool_calls or ()):
            args = _render(call.args, context, self._environ, whole_keeps_type=True)
            calls.append(
                ToolCall(
                    id=call.id or f"call_{cursor}_{index}_{digest}",
                    name=call.name,
                    arguments=args,
                )
            )
        return calls

    def _render_text(self, text: str, context: LlmContext) -> str:
        rendered = _render(text, context, self._environ, whole_keeps_type=False)
        return str(rendered)

    # --- building messages ---------------------------------------------------------

    def _usage(self, step: ScriptStep, context: LlmContext, content: list[AssistantContent]) -> Usage:
        if step.usage is not None:
            given = step.usage
            usage = usage_with_total(
                input=given.input,
                output=given.output,
                cache_read=given.cache_read,
                cache_write=given.cache_write,
            )
        else:
            request_chars = len(context.system_prompt) + sum(_message_chars(m) for m in context.messages)
            reply = AssistantMessage(content=list(content))
            usage = usage_with_total(
                input=_estimate_tokens(request_chars), output=_estimate_tokens(_message_chars(reply))
            )
        return calculate_cost(self.info, usage)

    def _message(
        self,
        content: list[AssistantContent],
        timestamp: int,
        extra: dict[str, Any],
        *,
        usage: Usage | None = None,
        stop_reason: str = "stop",
        error_message: str | None = None,
    ) -> AssistantMessage:
        fields: dict[str, Any] = {
            "content": [block.model_copy(deep=True) for block in content],
            "api": "scripted",
            "provider": "scripted",
            "model": self.info.id,
            "usage": usage if usage is not None else usage_with_total(),
            "stop_reason": stop_reason,
            "timestamp": timestamp,
        }
        if error_message is not None:
            fields["error_message"] = error_message
        return AssistantMessage(**fields, **extra)

    def _error_event(self, message: str, cursor: int, list_key: str, timestamp: int) -> ErrorEvent:
        extra = {SCRIPT_CURSOR_FIELD: cursor, SCRIPT_LIST_FIELD: list_key}
        error = self._message([], timestamp, extra, stop_reason="error", error_message=message)
        return ErrorEvent(reason="error", error=error)


# --- expectations ------------------------------------------------------------------


def _check_expectations(step: ScriptStep, context: LlmContext) -> None:
    expect = step.expect
    assert expect is not None
    if expect.last_user_contains is not None:
        newest = next((m for m in reversed(context.messages) if m.role in ("user", "custom")), None)
        if newest is None:
            raise _RequestFailure(
                f"expectation last_user_contains {_show(expect.last_user_contains)} failed: "
                "the request has no user message"
            )
        text = "\n".join(_message_texts(newest))
        if expect.last_user_contains not in text:
            raise _RequestFailure(
                f"expectation last_user_contains {_show(expect.last_user_contains)} failed: "
                f"the newest user message is {_show(text)}"
            )
    pieces = [(m.role, text) for m in context.messages for text in _message_texts(m)]
    for wanted in expect.context_contains:
        if not any(wanted in text for _role, text in pieces):
            tail = "\n".join(text for _role, text in pieces)[-_SHOW_LIMIT:]
            raise _RequestFailure(
                f"expectation context_contains {_show(wanted)} failed: it occurs in none of the request's "
                f"{len(context.messages)} messages, which end with {_show(tail)}"
            )
    for unwanted in expect.context_excludes:
        for role, text in pieces:
            if unwanted in text:
                raise _RequestFailure(
                    f"expectation context_excludes {_show(unwanted)} failed: it occurs in a {role} message: "
                    f"{_show(_window(text, unwanted))}"
                )
    if expect.tools_ok is not None:
        _check_tools_ok(expect.tools_ok, context)
    offered = [tool.name for tool in context.tools]
    for name in expect.tools_include:
        if name not in offered:
            raise _RequestFailure(
                f"expectation tools_include {_show(name)} failed: the tools offered are {_show(', '.join(offered))}"
            )
    for name in expect.tools_exclude:
        if name in offered:
            raise _RequestFailure(f"expectation tools_exclude {_show(name)} failed: the tool is offered")


def _check_tools_ok(wanted: bool, context: LlmContext) -> None:
    """`tools_ok`: the tool results after the newest assistant message all succeeded (or one failed)."""
    results: list[ToolResultMessage] = []
    for message in reversed(context.messages):
        if isinstance(message, AssistantMessage):
            break
        if isinstance(message, ToolResultMessage):
            results.append(message)
    if not results:
        raise _RequestFailure(
            f"expectation tools_ok {str(wanted).lower()} failed: the request answers no tool calls"
        )
    failed = [result for result in reversed(results) if result.is_error]
    if wanted and failed:
        first = failed[0]
        raise _RequestFailure(
            f"expectation tools_ok true failed: {first.tool_name} failed with "
            f"{_show(_content_text(first.content).strip())}"
        )
    if not wanted and not failed:
        raise _RequestFailure(f"expectation tools_ok false failed: all {len(results)} tool results succeeded")


# --- templates ---------------------------------------------------------------------

_MISSING = object()


def _lookup(root: str, path: list[str], context: LlmContext, environ: Mapping[str, str]) -> Any:
    expression = ".".join([root, *path])
    if root == "env":
        value = environ.get(path[0])
        if value is None:
            raise _RequestFailure(
                f"template {{{{ {expression} }}}}: the environment variable {path[0]} is not set"
            )
        return value
    if root == "last_tool_output":
        newest = next((m for m in reversed(context.messages) if isinstance(m, ToolResultMessage)), None)
        if newest is None:
            raise _RequestFailure("template {{ last_tool_output }}: the request has no tool result")
        return _content_text(newest.content).strip()
    role = "toolResult" if root == "last_tool_result" else "custom"
    if role == "toolResult":
        source = next((m for m in reversed(context.messages) if m.role == role), None)
    else:
        # The newest custom message that carries details: corral's own notes without details
        # (the delegation guidance, steered after the tool call, perhaps after a quick result)
        # are passed over. After `convert_to_llm` a custom message arrives as a user message
        # that keeps `customType` and `details` as extra fields.
        source = next(
            (
                m
                for m in reversed(context.messages)
                if (m.role == role and getattr(m, "details", None) is not None)
                or (
                    m.role == "user"
                    and "customType" in (m.model_extra or {})
                    and (m.model_extra or {}).get("details") is not None
                )
            ),
            None,
        )
    if source is None:
        kind = "tool result" if role == "toolResult" else "custom message"
        raise _RequestFailure(f"template {{{{ {expression} }}}}: the request has no {kind}")
    if source.role == role:
        current: Any = getattr(source, "details", None)
    else:
        current = (source.model_extra or {}).get("details")
    for depth, key in enumerate(path):
        current = _plain(current)
        found: Any = _MISSING
        if isinstance(current, dict):
            found = current.get(key, _MISSING)
        elif isinstance(current, list) and key.lstrip("-").isdigit():
            position = int(key)
            if -len(current) <= position < len(current):
                found = current[position]
        if found is _MISSING:
            reached = ".".join([root, *path[:depth]])
            raise _RequestFailure(f"template {{{{ {expression} }}}}: {reached} has no {key!r}")
        current = found
    return _plain(current)


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _render_string(
    value: str, context: LlmContext, environ: Mapping[str, str], *, whole_keeps_type: bool
) -> Any:
    whole = TEMPLATE_RE.fullmatch(value)
    if whole is not None and whole_keeps_type:
        return _lookup(*parse_template(whole.group(1)), context, environ)
    return TEMPLATE_RE.sub(lambda m: _as_text(_lookup(*parse_template(m.group(1)), context, environ)), value)


def _render(value: Any, context: LlmContext, environ: Mapping[str, str], *, whole_keeps_type: bool) -> Any:
    """Fill `{{ ... }}` templates in every string of `value` (recursively).

    In `args`, a string that is exactly one template takes the value's JSON
    type; elsewhere values are inserted as text (JSON for non-strings).
    """
    if isinstance(value, str):
        return _render_string(value, context, environ, whole_keeps_type=whole_keeps_type)
    if isinstance(value, dict):
        return {
            key: _render(item, context, environ, whole_keeps_type=whole_keeps_type)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_render(item, context, environ, whole_keeps_type=whole_keeps_type) for item in value]
    return value
