"""`corral run` output modes: print (final text) and json (event stream); rpc lives in `_rpc`.

The JSON shapes follow Pi's print and JSON modes so that programs written for
Pi's process modes work against corral: the first JSON line is the session
header, then every agent event follows as one line.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from collections.abc import Callable
from typing import Any, TextIO

from corral.agent import (
    AgentEvent,
    AutoRetryStartEvent,
    MessageUpdateEvent,
    ModelNoticeEvent,
    RateLimitWaitEvent,
    describe_failed_reply,
    reply_note,
)
from corral.llm import ToolCall, to_json_dict
from corral.orchestration.errors import InternalFailureError
from corral.session import SessionWriteError

from ._launch import Launched

__all__ = ["LineWriter", "event_json", "run_json_mode", "run_print_mode"]


_CLASS_PREFIX = re.compile(
    r"^(?:[A-Za-z_][A-Za-z0-9_]*\.)*[A-Z][A-Za-z0-9_]*(?:Error|Exception|Timeout|Failure): "
)
"""A Python exception's class name in front of a provider error's text (`ModelConnectionError: …`)."""


def plain_error(message: str) -> str:
    """A provider error as a person reads it: without the exception class name in front."""
    return _CLASS_PREFIX.sub("", message, count=1)


def _exit_status(launched: Launched) -> tuple[int, str | None]:
    """`(1, reason)` when the run ended in an error, an abort, SIGTERM or an empty reply (or a
    reply note that fails the run); else `(0, None)`."""
    if launched.failed is not None:
        return 1, launched.failed
    if launched.terminated:
        # A SIGTERM during a tool call leaves the tool-calling reply as the last one;
        # it is not an answer.
        return 1, "aborted (SIGTERM)"
    agent = launched.agent
    last = agent.last_reply
    if last is None:
        return 1, "the model gave no reply"
    if last.stop_reason in ("error", "aborted"):
        return 1, plain_error(describe_failed_reply(last, agent.model.info))
    note = reply_note(last, agent.model.info)
    if note is not None and last.stop_reason != "length":
        return 1, note
    return 0, None


def _final_exit(launched: Launched, err: TextIO) -> int:
    """1 (naming the reason on stderr) when the run ended in an error, an abort, SIGTERM or an empty
    reply; else 0 (a reply cut at the cap gets a one-line note).

    A failed write (`launched.failed`) was named on stderr when it happened, with the agents
    left unsettled: it is not printed again.
    """
    code, reason = _exit_status(launched)
    if reason is not None and launched.failed is None:
        print(f"corral: {reason}", file=err)
    last = launched.agent.last_reply
    if code == 0 and last is not None:
        note = reply_note(last, launched.agent.model.info)
        if note is not None:
            print(f"corral: note: {note}", file=err)
    return code


async def _run_headless(launched: Launched, prompt: str, err: TextIO) -> None:
    """Run the prompt, then keep going while managed agents can still deliver to the lead.

    Host warnings are printed to `err` as they happen (those from before the prompt first), and so
    are a window mostly taken by corral's own prompt and tools, each "retrying in N s" and each wait
    of the lead's request for its endpoint's shared rate limiter ("waiting (rate limit, Ns) at URL").
    """
    host = launched.host
    if host is not None:
        for warning in host.warnings:
            print(f"corral: warning: {warning}", file=err)
        host.on_warning = lambda warning: print(f"corral: warning: {warning}", file=err, flush=True)
    overhead = launched.agent.overhead_warning_once()
    if overhead is not None:
        print(f"corral: warning: {overhead}", file=err)

    noted_wait: list[int] = []

    def on_event(event: AgentEvent) -> None:
        if isinstance(event, RateLimitWaitEvent) and event.waiting and event.since_ms not in noted_wait:
            noted_wait.append(event.since_ms)  # once per wait
            now_ms = int(time.time() * 1000)
            print(f"corral: {event.describe(now_ms)} at {event.endpoint}", file=err, flush=True)
        if isinstance(event, ModelNoticeEvent):
            print(f"corral: warning: {event.text}", file=err, flush=True)
        if isinstance(event, AutoRetryStartEvent):
            print(
                f"corral: {plain_error(event.error_message)}; retrying in {event.delay_ms / 1000:g} s "
                f"(attempt {event.attempt} of {event.max_attempts})",
                file=err,
                flush=True,
            )

    unsubscribe = launched.agent.subscribe(on_event)
    try:
        # A recovered result or question may have woken the lead already: the prompt is answered after it.
        await launched.agent.prompt_when_idle(prompt)
        await launched.wait_until_quiet()
    except (SessionWriteError, InternalFailureError) as exc:
        # A write failed (typically a full disk): stop here, and name every agent left unsettled.
        launched.failed = str(exc)
        print(f"corral: error: {exc}", file=err)
        for line in launched.unsettled():
            print(f"corral: {line}", file=err)
        return
    finally:
        unsubscribe()
    for line in launched.left_waiting():
        print(f"corral: {line}", file=err)
    # Anything else not settled now (a result that could not be delivered or stored) fails the run.
    unsettled = launched.unsettled()
    if unsettled:
        launched.failed = unsettled[0]
        for line in unsettled:
            print(f"corral: error: {line}", file=err)


async def run_print_mode(launched: Launched, prompt: str, *, out: TextIO, err: TextIO) -> int:
    """Run one prompt and print the final assistant text. Exit 1 on a provider error or abort.

    With managed agents, the command ends when the lead is settled and nothing
    more can arrive for it; agents left waiting on a question or lost are named
    on stderr.
    """
    agent = launched.agent
    await _run_headless(launched, prompt, err)
    code = _final_exit(launched, err)
    if code == 0:
        last = agent.last_reply
        text = last.text if last is not None else ""
        out.write(text + ("" if text.endswith("\n") else "\n"))
        out.flush()
    return code


class LineWriter:
    """Writes one JSON object per line and flushes, so a reader sees each line at once.

    Text that cannot be encoded as UTF-8 (a lone surrogate) is written with
    `\\uXXXX` escapes instead, as JavaScript's `JSON.stringify` does. Once the
    reader has gone (a broken pipe), further lines are dropped.
    """

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._broken = False

    def write(self, obj: Any) -> None:
        if self._broken:
            return
        text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = json.dumps(obj, ensure_ascii=True, separators=(",", ":"))
        self.write_json_text(text)

    def write_json_text(self, text: str) -> None:
        """Write one line of JSON text built elsewhere (it must be valid, and encodable as UTF-8)."""
        if self._broken:
            return
        try:
            self._out.write(text + "\n")
            self._out.flush()
        except (BrokenPipeError, ValueError):  # the reader closed the pipe, or stdout was closed
            self._broken = True


def event_json(event: AgentEvent) -> dict[str, Any]:
    """An agent event as its JSON line object.

    `message_update` carries both Pi 0.73's fields (`message`, the stream event
    with `partial`) and Pi 1.x's additions (`usage` at the top, and `id` and
    `toolName` on `toolcall_start`), so readers written for either find theirs.
    """
    data = to_json_dict(event)
    if isinstance(event, MessageUpdateEvent):
        data["usage"] = data["message"].get("usage")
        stream_event = data["assistantMessageEvent"]
        index = stream_event.get("contentIndex")
        content = event.message.content
        if (
            stream_event.get("type") == "toolcall_start"
            and isinstance(index, int)
            and 0 <= index < len(content)
        ):
            block = content[index]
            if isinstance(block, ToolCall):
                stream_event["id"] = block.id
                stream_event["toolName"] = block.name
    return data


async def run_json_mode(
    launched: Launched, prompt: str, *, out: TextIO, err: TextIO, agents: bool = False
) -> int:
    """Print the session header, then every event of the run as one JSON line, and last a
    `run_end` line with the exit code (and the error, if any).

    With `agents`, the events of every managed and teams agent this process runs are
    interleaved, each with an `agent` object (`label`, `kind`, `runId`, `sessionId`).
    """
    agent = launched.agent
    writer = LineWriter(out)
    writer.write(to_json_dict(agent.session.header))
    unsubscribe = agent.subscribe(lambda event: writer.write(event_json(event)))
    follower = (
        asyncio.ensure_future(_follow_agents(launched, writer))
        if agents and launched.host is not None
        else None
    )
    try:
        await _run_headless(launched, prompt, err)
    finally:
        unsubscribe()
        if follower is not None:
            follower.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await follower
    code = _final_exit(launched, err)
    _, reason = _exit_status(launched)
    end: dict[str, Any] = {"type": "run_end", "exitCode": code}
    if reason is not None:
        end["error"] = reason
    writer.write(end)
    return code


async def _follow_agents(launched: Launched, writer: LineWriter) -> None:
    """Write the events of each agent the host starts, tagged with the agent, until cancelled.

    The host announces a new agent (`wait_for_change`) before its first model reply can
    arrive, so every reply and tool call of the agent is seen.
    """
    host = launched.host
    assert host is not None
    seen: set[str] = set()
    unsubscribes: list[Callable[[], None]] = []
    try:
        while True:
            for child in host.runs.children():
                run_id = child.run_id
                if run_id in seen:
                    continue
                seen.add(run_id)
                tag = {
                    "label": child.label,
                    "kind": "teams" if host.has_teams and host.teams.child(run_id) is not None else "managed",
                    "runId": run_id,
                    "sessionId": child.agent.session.session_id,
                }

                def write(event: AgentEvent, tag: dict[str, str] = tag) -> None:
                    writer.write({**event_json(event), "agent": tag})

                unsubscribes.append(child.agent.subscribe(write))
            await host.wait_for_change()
    finally:
        for unsubscribe in unsubscribes:
            unsubscribe()
