"""`corral mcp`: an MCP server over one lead session (`corral.open_lead`).

The MCP client (Claude Code, Codex, Cursor, Zed, …) is the lead. Each tool is
the lead's own tool, called through `Lead.call`, so arguments, results, errors
and categories are what a lead model gets, in MCP's words (`_texts.py`); a
result is its text plus `structuredContent` (the details, matching the tool's
`outputSchema`), an error is `isError: true` whose text names the category.
Besides the per-operation agent tools and, with the teams surface, the teams
tools, the server adds `merge` and `wait`: `wait` returns the items delivered
to the lead after a cursor, blocking until one arrives; the durable cursor in
the lead's session moves only when the client acknowledges an answer
(`_cursor.py`), so a server restarted with `--continue` never skips an item.
A finished agent's transcript stays readable until it is closed (`_finished.py`).

Resources: `corral://agents` (the `list` records), `corral://inbox` (items not
yet returned by `wait`; subscribers — `resources/subscribe` or, from protocol
2026-07-28 on, `subscriptions/listen` — hear `resources/updated` when one arrives) and `corral://agents/{label}/transcript`. The prompt `lead` tells
a leading model how to work the team.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ResourceUpdated
from mcp.shared.exceptions import MCPError

from corral._version import __version__
from corral.errors import CorralError
from corral.orchestration.kernel import fault_point
from corral.session import SessionWriteError

from ._cursor import Handout, WaitCursor
from ._finished import FinishedAgents
from ._handshake import LEAD_PROMPT, SERVER_NAME
from ._slot import LeadSlot
from ._texts import (
    TOOL_DESCRIPTIONS,
    item_json,
    item_text,
    mcp_words,
    output_schema,
    result_text,
    tool_hints,
    transcript_text,
)

if TYPE_CHECKING:
    from corral.lead import Lead, LeadItem
    from corral.llm import ToolDefinition

__all__ = [
    "AGENTS_URI",
    "INBOX_URI",
    "LEAD_PROMPT",
    "MCP_AGENT_TOOLS",
    "WAIT_DEFAULT_MS",
    "WAIT_MAX_MS",
    "build_server",
]

MCP_AGENT_TOOLS = (
    "agent_list",
    "agent_delegate",
    "agent_continue",
    "agent_steer",
    "agent_interrupt",
    "agent_reply",
    "agent_close",
    "agent_inspect",
    "agent_transcript",
)
"""The agent surface over MCP: the per-operation tools (the multiplexed `agent` tool is not offered).

Spelled out rather than derived from `surfaces.ACTIONS`: importing the core here would load it
before the server answers `initialize`. tests/mcp_server pins the same names against the lead.
"""

WAIT_DEFAULT_MS = 30_000
WAIT_MAX_MS = 300_000
PROGRESS_EVERY_S = 5.0
"""How often (at most) `wait` sends a progress notification while it blocks (when the client asked for
progress); a short wait reports four times, but not more often than every half second."""

AGENTS_URI = "corral://agents"
INBOX_URI = "corral://inbox"
TRANSCRIPT_TEMPLATE = "corral://agents/{label}/transcript"

WAIT_DESCRIPTION = (
    "Wait for what your agents deliver: results, questions (answer with agent_reply), reports, group indexes and "
    "messages. Returns every item after the cursor `after` (an item's entry_id; omitted: after the last item "
    "wait handed out), blocking until at least one arrives or timeoutMs passes. Call it instead of polling "
    "agent_list. Calling wait again acknowledges what the last answer carried; after a server crash an item "
    "not yet acknowledged can come once more (pass after to skip what you already have)."
)
WAIT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "timeoutMs": {
            "type": "integer",
            "minimum": 0,
            "maximum": WAIT_MAX_MS,
            "description": f"How long to block when nothing is there yet (default {WAIT_DEFAULT_MS}, max {WAIT_MAX_MS}).",
        },
        "after": {
            "type": ["string", "null"],
            "description": "Return items after this entry_id; omit to continue after the last item wait returned.",
        },
    },
    "additionalProperties": False,
}


MERGE_DESCRIPTION = (
    "Merge an isolated writer's branch (isolation = worktree) into the user's working tree, or discard it. "
    "Fast-forward or three-way; never overwrites uncommitted changes; on conflicts nothing changes and the "
    "conflicting paths are returned with the branch kept."
)
MERGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "agent": {
            "type": "string",
            "description": "The agent's label or team name, or its corral/... branch.",
        },
        "discard": {
            "type": "boolean",
            "description": "Remove the branch and its worktree instead of merging.",
        },
    },
    "required": ["agent"],
    "additionalProperties": False,
}


class WaitArgumentsError(CorralError):
    """`wait` was called with arguments it does not take."""


@dataclass
class _Subscribers:
    """Who hears of new items: sessions subscribed to `corral://inbox` (the handshake era's
    `resources/subscribe`) and the bus behind `subscriptions/listen` (2026-07-28 clients)."""

    sessions: list[ServerSession] = field(default_factory=list)
    bus: InMemorySubscriptionBus = field(default_factory=InMemorySubscriptionBus)


WAIT_NEXT_ACTION = (
    "Call wait with timeoutMs from 0 to 300000 and after set to an entry_id a wait returned (or null, or "
    "leave it out)."
)
WAIT_WRITE_NEXT_ACTION = (
    "Free space on the disk that holds corral's sessions, then call wait again the same way: nothing was "
    "handed out and the cursor did not move, so no item is lost."
)


def error_result(
    operation: str, category: str, message: str, next_action: str, **extra: Any
) -> types.CallToolResult:
    """A failed call in the shape every corral tool's error has: the text says what failed, the
    category and what to do (`Next: …`); `structuredContent.error` holds the same."""
    error = {
        "category": category,
        "message": message,
        "operation": operation,
        "rollbackOccurred": False,
        "retryAttempted": False,
        "nextAction": next_action,
    }
    text = f"{operation} failed ({category}): {message}\nNext: {next_action}"
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content={"ok": False, "error": error, **extra},
        is_error=True,
    )


def _parse_wait(args: dict[str, Any]) -> tuple[float, tuple[str | None] | None]:
    """`(timeout in seconds, after)`; `after` is `None` when not given, else a 1-tuple."""
    unknown = sorted(set(args) - {"timeoutMs", "after"})
    if unknown:
        raise WaitArgumentsError(f"wait takes timeoutMs and after; remove {', '.join(unknown)}")
    timeout_ms = args.get("timeoutMs", WAIT_DEFAULT_MS)
    if (
        isinstance(timeout_ms, bool)
        or not isinstance(timeout_ms, int | float)
        or not 0 <= timeout_ms <= WAIT_MAX_MS
    ):
        raise WaitArgumentsError(f"timeoutMs must be an integer from 0 to {WAIT_MAX_MS} (milliseconds)")
    if "after" not in args:
        return float(timeout_ms) / 1000.0, None
    after = args["after"]
    if after is not None and (not isinstance(after, str) or not after.strip()):
        raise WaitArgumentsError("after must be the entry_id of an item (a string) or null")
    return float(timeout_ms) / 1000.0, (after,)


async def _progress(session: ServerSession, timeout: float) -> None:
    """Report progress until cancelled; a client that cannot take it only ends the reports."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    every = min(PROGRESS_EVERY_S, max(0.5, timeout / 4))
    with contextlib.suppress(Exception):
        while True:
            await asyncio.sleep(every)
            elapsed = loop.time() - start
            await session.report_progress(elapsed, timeout, "waiting for agents")


ELICIT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "string", "title": "Your answer", "description": "Sent to the agent."}},
    "required": ["answer"],
}


async def _elicit(lead: Lead, item: LeadItem, ctx: ServerRequestContext[Any]) -> LeadItem:
    """Ask the human for the answer to an `ask` item and reply with it; the item notes the answer.

    Anything but an accepted, non-blank answer (declined, cancelled, no back channel) leaves the
    item as it was, for the leading model to answer with `agent_reply`.
    """
    agent = item.agent
    question = item.details.get("question")
    if agent is None or not isinstance(question, str):
        return item
    try:
        answer = await ctx.session.elicit_form(
            f"Agent {agent} asks: {question}", ELICIT_SCHEMA, related_request_id=ctx.request_id
        )
    except MCPError:
        return item
    text = (answer.content or {}).get("answer") if answer.action == "accept" else None
    if not isinstance(text, str) or not text.strip():
        return item
    replied = await lead.call("agent_reply", {"agent": agent, "message": text})
    if not replied.ok:
        return item
    details = {**item.details, "elicited_answer": text}
    return replace(
        item, text=f"{item.text}\n\n[Answered by the user through the client: {text}]", details=details
    )


def _can_elicit(ctx: ServerRequestContext[Any]) -> bool:
    capabilities = ctx.session.client_capabilities
    return capabilities is not None and capabilities.elicitation is not None and ctx.session.can_send_request


async def _wait(
    cursor: WaitCursor, args: dict[str, Any], ctx: ServerRequestContext[Any], *, elicit: bool = False
) -> types.CallToolResult:
    turn = cursor.arrive()
    lead = cursor.lead
    try:
        timeout, after = _parse_wait(args)
    except WaitArgumentsError as exc:
        return error_result("wait", "invalid_request", str(exc), WAIT_NEXT_ACTION)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    ticker = asyncio.create_task(_progress(ctx.session, timeout))
    handout: Handout | None = None
    try:
        try:
            async with cursor.lock:  # one call at a time: each item goes to one answer
                try:
                    start = cursor.start(turn, after=after)
                    items = await lead.collect(start, timeout=max(0.0, deadline - loop.time()))
                except SessionWriteError as exc:  # no space, an I/O error: not the caller's fault
                    return error_result("wait", "internal_failure", str(exc), WAIT_WRITE_NEXT_ACTION)
                except CorralError as exc:
                    return error_result("wait", "invalid_request", str(exc), WAIT_NEXT_ACTION)
                handout = cursor.hand(start, items[-1].entry_id if items else start)
                fault_point("mcp_wait_answer")  # collected, not yet answered: a crash test kills here
        finally:
            ticker.cancel()
            await asyncio.wait([ticker])  # unlike awaiting it, never swallows this call's own cancellation
        if elicit and _can_elicit(ctx):
            items = [await _elicit(lead, item, ctx) if item.kind == "ask" else item for item in items]
        answer = _wait_answer(items, handout.end, timeout)
    except BaseException:  # cancelled by the client (the SDK then sends nothing) or failed
        if handout is not None:
            cursor.withdraw(handout)
        raise
    cursor.left(handout)  # no await from here on: the SDK sends the answer unless it was cancelled
    return answer


def _wait_answer(items: list[LeadItem], end: str | None, timeout: float) -> types.CallToolResult:
    details = {
        "ok": True,
        "items": [item_json(item) for item in items],
        "cursor": end,
        "timedOut": not items,
    }
    if items:
        text = "\n\n".join(item_text(item) for item in items)
    else:
        text = f"Nothing arrived within {int(timeout * 1000)} ms. Call wait again to keep waiting."
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=details, is_error=False
    )


def _merge(lead: Lead, args: dict[str, Any]) -> types.CallToolResult:
    agent, discard = args.get("agent"), args.get("discard", False)
    if (
        not isinstance(agent, str)
        or not agent.strip()
        or not isinstance(discard, bool)
        or set(args) - {"agent", "discard"}
    ):
        return error_result(
            "merge",
            "invalid_request",
            "merge takes {agent: <label, name or branch>, discard?: bool}",
            "Call merge with agent set to the writer's label, team name or corral/... branch.",
        )
    from corral.lead import LeadCallError

    try:
        outcome = lead.merge(agent, discard=discard)
    except LeadCallError as exc:
        return error_result(
            "merge",
            exc.category or "invalid_request",
            str(exc),
            "Call agent_list for your agents' labels, or pass a corral/... branch.",
        )
    text = outcome["message"] + "".join(f"\n  {path}" for path in outcome["paths"])
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=outcome,
        is_error=not outcome["ok"],
    )


def _tool(name: str, description: str, input_schema: dict[str, Any]) -> types.Tool:
    return types.Tool(
        name=name,
        description=description,
        input_schema=input_schema,
        output_schema=output_schema(name),
        annotations=types.ToolAnnotations.model_validate(tool_hints(name)),
    )


def _offered(lead: Lead) -> list[ToolDefinition]:
    return [
        definition
        for definition in lead.tool_definitions()
        if definition.name != "agent" and definition.name != "report_and_exit"
    ]


def build_server(slot: LeadSlot, *, elicit: bool = False) -> Server[Any]:
    """The MCP server over the lead in `slot` (its tools, `wait`, resources and the `lead` prompt).

    With `elicit`, `wait` asks the human (MCP elicitation) for the answer to each question it
    returns, when the client can be asked, and replies to the agent with it.
    """
    subscribers = _Subscribers()
    cursors: list[WaitCursor] = []
    finished = FinishedAgents()

    async def _finished(lead: Lead, tool: str, label: str) -> types.CallToolResult | None:
        """A finished agent's transcript, or its closing (`None`: not a finished agent either)."""
        if tool == "agent_transcript":
            details = await finished.transcript(lead, label)
            if details is None:
                return None
            text = transcript_text(details)
        elif tool == "agent_close":
            if not await finished.close(lead, label):
                return None
            details = {"ok": True, "action": "close", "agent": label, "finished": True}
            text = f"Closed agent {label}: it had finished; its transcript is no longer offered."
        else:
            return None
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)], structured_content=details, is_error=False
        )

    def wait_cursor(lead: Lead) -> WaitCursor:
        if not cursors:
            cursors.append(WaitCursor(lead))
        return cursors[0]

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        tools = [
            _tool(d.name, TOOL_DESCRIPTIONS.get(d.name, d.description), d.parameters)
            for d in _offered(await slot.get())
        ]
        tools.append(_tool("merge", MERGE_DESCRIPTION, MERGE_SCHEMA))
        tools.append(_tool("wait", WAIT_DESCRIPTION, WAIT_SCHEMA))
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        args = dict(params.arguments or {})
        lead = await slot.get()
        names = {definition.name for definition in _offered(lead)}
        try:
            if params.name == "wait":
                return await _wait(wait_cursor(lead), args, ctx, elicit=elicit)
            if params.name == "merge":
                return _merge(lead, args)
            if params.name not in names:
                known = ", ".join([*sorted(names), "merge", "wait"])
                return error_result(
                    params.name,
                    "invalid_request",
                    f"there is no tool {params.name!r}",
                    f"Call one of {known}.",
                )
            outcome = await lead.call(params.name, args)
            if outcome.category == "target_not_found" and isinstance(args.get("agent"), str):
                finished_result = await _finished(lead, params.name, args["agent"])
                if finished_result is not None:
                    return finished_result
        except CorralError as exc:
            return error_result(params.name, "invalid_request", str(exc), "Fix the arguments and call again.")
        text = result_text(params.name, outcome.text, outcome.details, ok=outcome.ok)
        if not outcome.ok and outcome.category and outcome.category not in text:
            text = f"{text} (category: {outcome.category})"
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            structured_content=outcome.details,
            is_error=not outcome.ok,
        )

    async def list_resources(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    name="agents",
                    uri=AGENTS_URI,
                    description="The agents of this lead session (the agent_list records).",
                    mime_type="application/json",
                ),
                types.Resource(
                    name="inbox",
                    uri=INBOX_URI,
                    description="Items delivered to the lead that wait has not returned yet; subscribe for updates.",
                    mime_type="application/json",
                ),
            ]
        )

    async def list_templates(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    name="transcript",
                    uri_template=TRANSCRIPT_TEMPLATE,
                    description="An agent's transcript (compaction-aware), by label.",
                    mime_type="text/plain",
                )
            ]
        )

    async def read_resource(
        ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        lead = await slot.get()
        if uri == AGENTS_URI:
            outcome = await lead.call("agent_list", {})
            text, mime = json.dumps(outcome.details, ensure_ascii=False), "application/json"
        elif uri == INBOX_URI:
            pending = [item_json(item) async for item in lead.items(after=wait_cursor(lead).pending_from())]
            text, mime = json.dumps({"items": pending}, ensure_ascii=False), "application/json"
        elif uri.startswith("corral://agents/") and uri.endswith("/transcript"):
            label = uri.removeprefix("corral://agents/").removesuffix("/transcript")
            outcome = await lead.call("agent_transcript", {"agent": label})
            text = outcome.text
            if outcome.category == "target_not_found":
                details = await finished.transcript(lead, label)
                if details is not None:
                    text = transcript_text(details)
                else:
                    raise ValueError(mcp_words(outcome.text))
            elif not outcome.ok:
                raise ValueError(mcp_words(outcome.text))
            mime = "text/plain"
        else:
            raise ValueError(
                f"unknown resource {uri}: read {AGENTS_URI}, {INBOX_URI} or {TRANSCRIPT_TEMPLATE}"
            )
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type=mime, text=text)]
        )

    async def subscribe(
        ctx: ServerRequestContext[Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        if str(params.uri) == INBOX_URI and ctx.session not in subscribers.sessions:
            subscribers.sessions.append(ctx.session)
        return types.EmptyResult()

    async def unsubscribe(
        ctx: ServerRequestContext[Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        if str(params.uri) == INBOX_URI:
            subscribers.sessions = [s for s in subscribers.sessions if s is not ctx.session]
        return types.EmptyResult()

    async def list_prompts(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return types.ListPromptsResult(
            prompts=[types.Prompt(name="lead", description="How to lead a corral team over these tools.")]
        )

    async def get_prompt(
        ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        if params.name != "lead":
            raise ValueError(f"unknown prompt {params.name!r}: the prompt is 'lead'")
        return types.GetPromptResult(
            description="How to lead a corral team",
            messages=[
                types.PromptMessage(role="user", content=types.TextContent(type="text", text=LEAD_PROMPT))
            ],
        )

    @contextlib.asynccontextmanager
    async def lifespan(server: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        watcher = asyncio.create_task(_notify_inbox(slot, subscribers))
        try:
            yield {}
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher

    return Server(
        SERVER_NAME,
        version=__version__,
        instructions=LEAD_PROMPT,
        lifespan=lifespan,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_subscribe_resource=subscribe,
        on_unsubscribe_resource=unsubscribe,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_subscriptions_listen=ListenHandler(subscribers.bus),
    )


async def _notify_inbox(slot: LeadSlot, subscribers: _Subscribers) -> None:
    """Tell subscribers of `corral://inbox` each time an item arrives (from when the lead opens)."""
    try:
        lead = await slot.when_started()
    except Exception:
        return  # the failure is reported where the lead is opened
    while True:
        await lead.arrival()
        await subscribers.bus.publish(ResourceUpdated(uri=INBOX_URI))
        for session in list(subscribers.sessions):
            try:
                await session.send_resource_updated(INBOX_URI)
            except Exception:  # a gone client: forget it
                subscribers.sessions = [s for s in subscribers.sessions if s is not session]
