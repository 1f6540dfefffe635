"""`open_lead` and `Lead`: a program leads a corral team.

A `Lead` is one lead session with its host, built by the composition root
(`_compose.launch_session` with `program=True`, then `attach_host`), exactly
as `corral run` builds its lead. The program calls the lead's tools by name
(`call`): the same tool objects a model would call, so arguments, results,
errors and categories are the model's. What reaches the lead arrives as
items (`_items`), persisted in the lead's session before anything returns
them.

Two ways to read items:

* `next_item` returns each item once per open lead, starting with what
  arrives after the lead was opened (results recovered on reopen included);
* `items(after=entry_id)` replays what the session holds after a cursor, so a
  program that crashed resumes where it left off. Whatever `items` yields is
  not returned again by `next_item`.

`save_cursor`/`saved_cursor` keep a durable bookmark in the lead's session (a
`corral-lead-cursor` custom entry): `corral mcp`'s `wait` resumes from it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

from pydantic import ValidationError

from corral import _tracing
from corral._paths import corral_home
from corral._tracing._run import start_run_trace
from corral.agent import (
    AgentTool,
    MessageEndEvent,
    ToolArgumentsError,
    ToolError,
    ToolResult,
    validate_tool_arguments,
)
from corral.errors import UsageError
from corral.llm import CustomMessage, TextContent, ToolDefinition
from corral.session import CustomEntry
from corral.settings import BudgetSettings

from ._compose import SURFACE_NAMES, Launched, LaunchOptions, launch_session
from ._handles import AgentHandle, AgentRow, LeadCallError
from ._items import ITEM_TYPES, ItemLog, LeadItem

if TYPE_CHECKING:
    from corral._tracing._records import Span
    from corral.orchestration import Caller

    from ._host import ComposedHost as Host

__all__ = ["CURSOR_TYPE", "Lead", "ToolOutcome", "open_lead"]

CURSOR_TYPE = "corral-lead-cursor"
"""`customType` of the durable cursor entry (`data: {"after": entry_id}`)."""

Isolation = Literal["shared", "worktree"]
MergePolicy = Literal["manual", "on-accept"]

CLOSED = "this lead is closed: use it inside its `async with corral.open_lead(...)` block, or open it again"
"""What using a lead after its block says."""


class _DataRoots:
    """The data roots of the leads open in this process.

    `home=` sets `CORRAL_HOME` for the whole process, and every part of corral reads it when it writes
    (sessions, the store, worktrees): a second lead with another root would move the first one's agents
    to it. So one process has one data root at a time; a lead asking for another is refused while a
    lead of the first is open.
    """

    def __init__(self) -> None:
        self._open: dict[Path, int] = {}

    def enter(self, home: str | os.PathLike[str] | None) -> Path:
        """Take the data root `home` asks for (`None`: the current one) for one lead; refuse another."""
        root = corral_home() if home is None else Path(home).expanduser().resolve()
        held = next((other for other in self._open if other != root), None)
        if held is not None:
            raise UsageError(
                f"open_lead(home={os.fspath(home) if home is not None else None!r}): data root {root} "
                f"differs from {held}, where a lead of this process is open; a process has one data root "
                "at a time: close that lead first, or open this one with the same home"
            )
        if home is not None:
            os.environ["CORRAL_HOME"] = os.fspath(root)
        self._open[root] = self._open.get(root, 0) + 1
        return root

    def leave(self, root: Path) -> None:
        """One lead of `root` closed."""
        left = self._open.get(root, 0) - 1
        if left > 0:
            self._open[root] = left
        else:
            self._open.pop(root, None)


_DATA_ROOTS = _DataRoots()


def _choice(name: str, value: object, allowed: tuple[str, ...]) -> None:
    """Refuse an option value outside `allowed`, naming the allowed ones."""
    if value is not None and value not in allowed:
        names = " or ".join(repr(choice) for choice in allowed)
        raise UsageError(f"open_lead({name}={value!r}): choose {names} (or None for the setting)")


@dataclass(frozen=True)
class ToolOutcome:
    """What a tool returned: exactly what a model calling it would get."""

    ok: bool
    """`False` when the tool answered with an error (the model would see `isError`)."""
    text: str
    """The result text the model reads."""
    _: KW_ONLY
    details: dict[str, Any] | None = None
    """The structured details (`{ok: false, error: {category, message, ...}}` on an error)."""

    @property
    def category(self) -> str | None:
        """The error category of a failed call (`invalid_request`, `target_not_found`, …), else `None`."""
        if self.ok or not isinstance(self.details, dict):
            return None
        error = self.details.get("error")
        if isinstance(error, dict) and isinstance(error.get("category"), str):
            return str(error["category"])
        return "invalid_request"


class _SilentGuide:
    """A program lead without a model needs no delegation guidance in its session."""

    def send_once(self, caller: Caller, call_id: str) -> None:
        """Nothing: there is no model to guide."""


class Lead:
    """One open lead session; made by `open_lead`."""

    def __init__(self, launched: Launched, *, trace_root: Span | None = None) -> None:
        self._launched = launched
        self._trace_root = trace_root
        """The lead's root span (tracing on): the program's tool calls are recorded under it."""
        self._log = ItemLog(launched.session)
        self._position = len(self._log)
        self._arrived = asyncio.Event()
        self._tools: dict[str, AgentTool] = {}
        self._unsubscribe = launched.agent.subscribe(self._on_event)
        self._closed = False

    @property
    def closed(self) -> bool:
        """Whether the lead's block was left (every call then raises `UsageError`)."""
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise UsageError(CLOSED)

    # --- identity ------------------------------------------------------------------------------

    @property
    def session_id(self) -> str:
        """The lead session's id (`open_lead(session=...)` reopens it)."""
        return self._launched.session.session_id

    @property
    def session_path(self) -> Path:
        """The lead session's file."""
        path = self._launched.session.path
        assert path is not None  # a program lead's session is always persisted
        return path

    @property
    def cwd(self) -> Path:
        """The lead's working directory."""
        return self._launched.agent.cwd

    @property
    def surfaces(self) -> tuple[str, ...]:
        """The tool surfaces the lead has (`agent`, `teams`)."""
        return tuple(self._launched.surfaces)

    @property
    def has_model(self) -> bool:
        """Whether `prompt` can run a turn (the lead was opened with a model)."""
        return self._launched.has_model

    @property
    def host(self) -> Host:
        """The orchestration host (for front ends built on the API, such as `corral mcp`)."""
        self._check_open()
        host = self._launched.host
        assert host is not None
        return host

    @property
    def warnings(self) -> list[str]:
        """Warnings of the host for the person at the front end (e.g. after a recovery)."""
        return list(self.host.warnings)

    # --- tools ---------------------------------------------------------------------------------

    def _install_tools(self) -> None:
        from corral.orchestration import surfaces as surface_pkg
        from corral.orchestration.surfaces import TurnGuide

        host, caller = self.host, self._launched.caller
        assert caller is not None
        guide: Any = TurnGuide() if self.has_model else _SilentGuide()
        tools: list[AgentTool] = []
        if "agent" in self.surfaces:
            tools.append(surface_pkg.MultiplexedAgentTool(host.controller, caller, guide))
            tools.extend(surface_pkg.operation_tools(host.controller, caller, guide))
        if "teams" in self.surfaces:
            from corral.orchestration.surfaces.teams import teams_lead_tools

            tools.extend(teams_lead_tools(host.teams, caller))
        self._tools = {tool.name: tool for tool in tools}

    @property
    def tool_names(self) -> tuple[str, ...]:
        """Every tool `call` accepts: `agent`, the nine `agent_*` tools, the teams tools."""
        return tuple(self._tools)

    def tool_definitions(self) -> list[ToolDefinition]:
        """Name, description and JSON schema of each tool, as a model is offered them."""
        return [tool.definition() for tool in self._tools.values()]

    async def call(self, tool_name: str, args: dict[str, Any] | None = None) -> ToolOutcome:
        """Call one of the lead's tools by name, as the lead's model would.

        Args:
            tool_name: `agent`, `agent_<action>` or a teams tool (see `tool_names`).
            args: The tool's JSON arguments.

        Returns:
            The tool's answer; a bad call is an answer too (`ok=False`, with its category).
        """
        self._check_open()
        tool = self._tools.get(tool_name)
        if tool is None:
            known = ", ".join(self._tools)
            message = f"Tool {tool_name} not found (this lead has: {known})"
            error = {"category": "invalid_request", "message": message}
            return ToolOutcome(False, message, details={"ok": False, "error": error})
        try:
            checked = validate_tool_arguments(tool_name, tool.parameters, {} if args is None else args)
        except ToolArgumentsError as exc:
            error = {"category": "invalid_request", "message": str(exc)}
            return ToolOutcome(False, str(exc), details={"ok": False, "error": error})
        call_id = f"call-{uuid.uuid4().hex[:16]}"
        with _tool_span(self._trace_root, tool_name, call_id) as traced:
            # the user's rules and hooks bind a program's calls as they bind the lead's model's
            verdict = await self._launched.agent.check_tool_call(call_id, tool_name, checked)
            try:
                if verdict is not None and verdict.decision != "allow":
                    result = ToolResult.text(f"{tool_name} was not run: {verdict.reason}", is_error=True)
                else:
                    result = await tool.execute(call_id, checked)
            except ToolError as exc:
                result = ToolResult.text(str(exc), details=exc.details, is_error=True)
            if traced is not None and result.is_error:
                traced.fail(_first_text(result)[:500] or "tool error")
        text = _first_text(result)
        details = result.details if isinstance(result.details, dict) else None
        return ToolOutcome(not result.is_error, text, details=details)

    async def call_ok(self, tool_name: str, args: dict[str, Any]) -> dict[str, Any]:
        """`call`, raising `LeadCallError` when the tool answers with an error; the result's details."""
        outcome = await self.call(tool_name, args)
        if not outcome.ok:
            raise LeadCallError(tool_name, outcome.text, category=outcome.category, details=outcome.details)
        return outcome.details or {}

    # --- items ---------------------------------------------------------------------------------

    def _on_event(self, event: object) -> None:
        if (
            isinstance(event, MessageEndEvent)
            and isinstance(event.message, CustomMessage)
            and event.message.custom_type in ITEM_TYPES
        ):
            self._arrived.set()
            self._arrived = asyncio.Event()

    async def arrival(self) -> None:
        """Return when the next item arrives (for front ends that watch the lead's inbox)."""
        await self._arrived.wait()

    @staticmethod
    async def _arrival(arrived: asyncio.Event, deadline: float | None) -> bool:
        """Wait until `arrived` is set (an item arrived); `False` when the deadline passed first."""
        loop = asyncio.get_running_loop()
        remaining = None if deadline is None else deadline - loop.time()
        if remaining is not None and remaining <= 0:
            return False
        try:
            await asyncio.wait_for(arrived.wait(), remaining)
        except TimeoutError:
            return False
        return True

    def _deadline(self, timeout: float | None) -> float | None:
        return None if timeout is None else asyncio.get_running_loop().time() + max(0.0, timeout)

    async def next_item(self, timeout: float | None = None) -> LeadItem | None:
        """The next item delivered to the lead, waiting up to `timeout` seconds (`None`: no limit).

        Each item is returned once per open lead, and only after it is persisted in the
        lead's session. Returns `None` when nothing arrived in time.
        """
        self._check_open()
        deadline = self._deadline(timeout)
        while True:
            arrived = self._arrived
            item = self._log.at(self._position)
            if item is not None:
                self._position += 1
                return item
            if not await self._arrival(arrived, deadline):
                return None

    def _start(self, after: str | None) -> int:
        index = self._log.position_after(after)
        if index is None:
            raise UsageError(
                f"no item {after!r} in lead session {self.session_id}: pass the entry_id of an item "
                "this session returned, or None to start from its first item"
            )
        return index

    async def items(self, after: str | None = None) -> AsyncIterator[LeadItem]:
        """Every item the lead's session holds after the item `after` (`None`: from the first).

        Replays persisted items (it does not wait for new ones); `next_item` will not return
        them again.

        Raises:
            UsageError: `after` is not the entry id of an item of this session.
        """
        self._check_open()
        index = self._start(after)
        while (item := self._log.at(index)) is not None:
            index += 1
            self._position = max(self._position, index)
            yield item

    async def collect(self, after: str | None = None, *, timeout: float | None = None) -> list[LeadItem]:
        """Every item after `after`, waiting up to `timeout` seconds for at least one.

        Raises:
            UsageError: `after` is not the entry id of an item of this session.
        """
        self._check_open()
        index = self._start(after)
        deadline = self._deadline(timeout)
        while True:
            arrived = self._arrived
            found = self._log.refresh()[index:]
            if found:
                self._position = max(self._position, index + len(found))
                return list(found)
            if not await self._arrival(arrived, deadline):
                return []

    def save_cursor(self, entry_id: str | None) -> None:
        """Record durably (in the lead's session) that items up to `entry_id` were handed on."""
        self._check_open()
        if entry_id is not None:
            self._start(entry_id)
        self._launched.session.append_custom(CURSOR_TYPE, {"after": entry_id})

    def saved_cursor(self) -> str | None:
        """The last cursor `save_cursor` recorded in this session (`None`: none yet)."""
        self._check_open()
        for entry in reversed(self._launched.session.entries):
            if isinstance(entry, CustomEntry) and entry.custom_type == CURSOR_TYPE:
                data = entry.data if isinstance(entry.data, dict) else {}
                after = data.get("after")
                return after if isinstance(after, str) else None
        return None

    async def wait_quiet(self, timeout: float | None = None) -> bool:
        """Wait until nothing more can arrive without the program acting (all agents settled,
        idle on a question, or lost). Returns `False` when `timeout` passed first."""
        self._check_open()
        try:
            await asyncio.wait_for(self.host.wait_until_quiet(self.session_id), timeout)
        except TimeoutError:
            return False
        return True

    # --- a model turn ----------------------------------------------------------------------------

    async def prompt(self, text: str) -> str:
        """Run one lead turn on the lead's model and return its final text.

        Raises:
            UsageError: the lead was opened without a model.
        """
        self._check_open()
        if not self.has_model:
            raise UsageError(
                "this lead has no model: open it with open_lead(model='provider/model') to prompt"
            )
        agent = self._launched.agent
        await agent.prompt_when_idle(text)
        return agent.last_assistant_text() or ""

    # --- typed conveniences -----------------------------------------------------------------------

    async def delegate(
        self,
        definition: str,
        task: str,
        *,
        label: str | None = None,
        cwd: str | None = None,
        files: Sequence[str] | None = None,
    ) -> AgentHandle:
        """Start a managed agent (`agent` action `delegate`) and return its handle.

        Raises:
            LeadCallError: the call failed (its `category` says why).
        """
        args: dict[str, Any] = {"action": "delegate", "definition": definition, "task": task}
        if label is not None:
            args["label"] = label
        if cwd is not None:
            args["cwd"] = cwd
        if files is not None:
            args["files"] = list(files)
        details = await self.call_ok("agent", args)
        return AgentHandle(
            self,
            str(details["agent"]),
            request_id=str(details["request_id"]),
            session_id=details.get("session_id"),
        )

    def agent(self, label: str) -> AgentHandle:
        """A handle on an existing agent (its `result` is the next result of that agent)."""
        self._check_open()
        return AgentHandle(self, label, request_id=None, after=len(self._log))

    async def agents(self) -> list[AgentRow]:
        """The agents this lead can see (`agent` action `list`), as typed rows."""
        details = await self.call_ok("agent", {"action": "list"})
        return [AgentRow.from_record(record) for record in details.get("agents", [])]

    async def spawn(self, name: str, prompt: str, **fields: Any) -> dict[str, Any]:
        """Spawn a teams agent (`spawn_agent`; `fields` are its other arguments, e.g. `model_slot`).

        Returns the tool's details; the report arrives as an item of kind `report`.

        Raises:
            LeadCallError: the call failed (its `category` says why).
        """
        return await self.call_ok("spawn_agent", {"name": name, "prompt": prompt, **fields})

    async def spawn_swarm(
        self,
        agents: Sequence[dict[str, Any]],
        *,
        defaults: dict[str, Any] | None = None,
        completion_group: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Spawn several teams agents at once (`spawn_swarm_agents`); returns the tool's details.

        With `completion_group` (e.g. `{"delivery": "all-settled"}`) one item of kind `group`
        indexes their reports.

        Raises:
            LeadCallError: the call failed (its `category` says why).
        """
        args: dict[str, Any] = {"agents": [dict(agent) for agent in agents]}
        if defaults is not None:
            args["defaults"] = defaults
        if completion_group is not None:
            args["completion_group"] = completion_group
        return await self.call_ok("spawn_swarm_agents", args)

    def merge(self, agent: str, *, discard: bool = False) -> dict[str, Any]:
        """Merge an isolated writer's branch into the working tree (or discard it), like `corral merge`.

        Args:
            agent: The agent's label or team name, or its `corral/...` branch.
            discard: Remove the branch and its worktree instead of merging.

        Returns:
            `{"branch", "outcome", "message", "paths", "commit", "kind", "ok"}`: `outcome` is `merged`,
            `nothing`, `discarded`, or (`ok` false, the tree unchanged) `conflict` / `refused` with the
            conflicting or overlapping `paths`.

        Raises:
            LeadCallError: no such agent or branch (`target_not_found`), it is still running or was
                discarded (`invalid_request`), another merge is in flight (`agent_busy`).
        """
        self._check_open()
        from corral.orchestration.errors import OrchestrationError, error_details
        from corral.orchestration.worktrees._extension import worktrees_of

        assert self.host is not None
        trees = worktrees_of(self.host.extensions, self.host.kernel.db)
        try:
            outcome = trees.discard(agent) if discard else trees.merge(agent)
        except OrchestrationError as exc:
            error = error_details(exc, operation="merge")
            raise LeadCallError("merge", str(exc), category=error["category"]) from None
        return {
            "branch": outcome.branch,
            "outcome": outcome.outcome,
            "message": outcome.message,
            "paths": list(outcome.paths),
            "commit": outcome.commit,
            "kind": outcome.kind,
            "ok": outcome.ok,
        }

    def record_report_acceptance(
        self, report_id: str, state: str, reason: str | None = None
    ) -> dict[str, Any]:
        """Record the lead's decision on one of its teams reports: `accepted` or `rejected`.

        Returns the report's `result` with its `acceptance`.

        Raises:
            LeadCallError: no such report of this lead (`target_not_found`), or a bad state
                (`invalid_request`); nothing is changed.
        """
        self._check_open()
        report = self.host.repositories.teams.reports.team_report(report_id)
        if report is None or report.lead_session_id != self.session_id:
            raise LeadCallError(
                "record_report_acceptance",
                f"No report {report_id} of this lead session; take report_id from a report item's details.",
                category="target_not_found",
            )
        from corral.orchestration.errors import OrchestrationError, error_details

        try:
            record = self.host.teams.control.record_report_acceptance(report_id, state, reason)
        except OrchestrationError as exc:
            error = error_details(exc, operation="record_report_acceptance")
            raise LeadCallError("record_report_acceptance", str(exc), category=error["category"]) from None
        return record.result.to_json()

    async def result_of(self, handle: AgentHandle, timeout: float | None = None) -> LeadItem:
        """The result item of `handle`'s request (see `AgentHandle.result`)."""
        self._check_open()
        deadline = self._deadline(timeout)
        while True:
            arrived = self._arrived
            for item in self._log.refresh()[handle.after :]:
                if item.kind in ("result", "report") and handle.matches(item):
                    return item
            if not await self._arrival(arrived, deadline):
                raise TimeoutError(f"no result from agent {handle.label} within {timeout} s")

    # --- closing -----------------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Stop the agents running in this process, close the store and the session."""
        if self._closed:
            return
        self._closed = True
        self._unsubscribe()
        try:
            await self._launched.aclose()
        finally:
            self._launched.session.close()


@contextlib.contextmanager
def _tool_span(root: Span | None, tool_name: str, call_id: str) -> Iterator[Span | None]:
    """The program's tool call as a span under the lead's root, current while the tool runs (an agent
    it starts runs under it); nothing while tracing is off."""
    tracer = _tracing.active
    if tracer is None:
        yield None
        return
    traced = tracer.start(
        f"execute_tool {tool_name}",
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool_name,
            "gen_ai.tool.call.id": call_id,
            "corral.agent": "lead",
        },
        root,
    )
    token = tracer.activate(traced)
    try:
        yield traced
    except BaseException as exc:
        traced.fail(
            type(exc).__name__ if isinstance(exc, asyncio.CancelledError) else str(exc) or type(exc).__name__
        )
        raise
    finally:
        tracer.deactivate(token)
        traced.end()


def _first_text(result: ToolResult) -> str:
    return "".join(part.text for part in result.content if isinstance(part, TextContent))


def _budget_override(base: BudgetSettings, given: Mapping[str, float]) -> BudgetSettings:
    """`base` with the keys of `given` replaced; a bad key or value is a `UsageError` naming it."""
    if not isinstance(given, Mapping):
        raise UsageError("budget must be a mapping such as {'tree_tokens': 2_000_000}")
    try:
        return BudgetSettings.model_validate({**base.model_dump(exclude_unset=True), **given})
    except ValidationError as exc:
        error = exc.errors()[0]
        key = ".".join(str(part) for part in error["loc"])
        if error["type"] == "extra_forbidden":
            raise UsageError(f'budget: unknown key {key!r} (see docs/fleet.md, "Budgets")') from None
        raise UsageError(f"budget: invalid value for {key!r}: {error['msg']}") from None


@contextlib.asynccontextmanager
async def open_lead(
    cwd: str | os.PathLike[str] = ".",
    *,
    session: str | os.PathLike[str] | None = None,
    continue_recent: bool = False,
    model: str | None = None,
    surfaces: Sequence[str] = ("agent",),
    home: str | os.PathLike[str] | None = None,
    isolation: Isolation | None = None,
    merge: MergePolicy | None = None,
    budget: Mapping[str, float] | None = None,
    trace: str | os.PathLike[str] | None = None,
    _front: Literal["api", "mcp"] = "api",
) -> AsyncIterator[Lead]:
    """Open a lead session for a program: `async with corral.open_lead() as lead: ...`.

    Args:
        cwd: The lead's working directory (agents' relative `cwd` and `files` resolve there).
        session: Reopen this lead session (a path, an id or an id prefix) and recover it like
            `corral run --session`: undelivered results are delivered once, agents whose host
            died are marked lost.
        continue_recent: Reopen this directory's newest session (like `--continue`).
        model: The lead's model, needed only for `prompt`; `None`: the program is the lead.
        surfaces: The tool surfaces: `agent` and/or `teams`.
        home: The data root (sets `CORRAL_HOME` for this process; default: the usual one). One
            process has one data root at a time: while a lead is open, another with a different
            `home` is refused.
        isolation: Override the `isolation` setting for this lead: `worktree` gives every write
            agent its own git worktree and branch (merge with `Lead.merge`).
        merge: Override the `merge` setting: `on-accept` merges a teams writer's branch when
            `record_report_acceptance` accepts its report.
        budget: Limits for this lead's agent tree and its agents, replacing the `[budget]` keys
            given: `tree_tokens`, `tree_cost_usd`, `tree_minutes`, `agent_tokens`,
            `agent_cost_usd`, `agent_minutes`, `soft_threshold` (docs/fleet.md, "Budgets").
        trace: Append this lead's spans to this file, like `corral run --trace FILE` (read it with
            `corral trace FILE`). Without it the lead is traced when the `OTEL_*` variables ask for an
            exporter, or under tracing the program set up already (docs/fleet.md, "Traces").
        _front: corral's own front ends only: which one opened the lead (`corral mcp` passes `mcp`),
            recorded in a new session's header for `corral sessions`.

    Raises:
        UsageError: a bad option (`isolation`, `merge`, `budget`, `surfaces`, `cwd`), or a `home`
            other than the data root of a lead still open in this process; nothing is created.
        CorralError: for anything else the caller can fix (the message says how).
    """
    if not surfaces:
        raise UsageError("open_lead(surfaces=()): choose at least one surface, 'agent' and/or 'teams'")
    if not Path(cwd).expanduser().is_dir():
        raise UsageError(
            f"open_lead(cwd={os.fspath(cwd)!r}): not a directory; pass the lead's working directory"
        )
    for surface in surfaces:
        if surface not in SURFACE_NAMES:
            raise UsageError(f"unknown surface {surface!r}: choose 'agent' and/or 'teams'")
    _choice("isolation", isolation, get_args(Isolation))
    _choice("merge", merge, get_args(MergePolicy))
    if budget is not None:
        _budget_override(BudgetSettings(), budget)  # refused before a session exists
    root = _DATA_ROOTS.enter(home)
    try:
        async with _open_lead(
            cwd, session, continue_recent, model, surfaces, isolation, merge, budget, trace, _front
        ) as lead:
            yield lead
    finally:
        _DATA_ROOTS.leave(root)


@contextlib.asynccontextmanager
async def _open_lead(
    cwd: str | os.PathLike[str],
    session: str | os.PathLike[str] | None,
    continue_recent: bool,
    model: str | None,
    surfaces: Sequence[str],
    isolation: Isolation | None,
    merge: MergePolicy | None,
    budget: Mapping[str, float] | None,
    trace: str | os.PathLike[str] | None,
    front: Literal["api", "mcp"],
) -> AsyncIterator[Lead]:
    options = LaunchOptions(
        Path(cwd),
        model=model,
        session=None if session is None else os.fspath(session),
        continue_recent=continue_recent,
        surfaces=list(surfaces),
        program=True,
        front=front,
    )
    # Traced: a root span of its own (a trace file, the `OTEL_*` exporters, or tracing the program set
    # up), unless the program opened the lead under a span of its own already (then that is the root).
    tracer = _tracing.active
    outer = None if trace is not None or tracer is None else tracer.current()
    traced = None
    if outer is None:
        traced = start_run_trace(
            None if trace is None else Path(trace), command="api", activate=False, reuse_active=True
        )
    root = outer if traced is None else traced.root
    try:
        # The lead's session records its turns under the root span current while it is built.
        token = None if traced is None else traced.tracer.activate(traced.root)
        try:
            launched = launch_session(options)
        finally:
            if traced is not None:
                traced.tracer.deactivate(token)
    except BaseException:
        if traced is not None:
            traced.close()
        raise
    try:
        async with _traced_lead(launched, isolation, merge, budget, root) as lead:
            yield lead
    finally:
        if traced is not None:
            traced.close()


@contextlib.asynccontextmanager
async def _traced_lead(
    launched: Launched,
    isolation: Isolation | None,
    merge: MergePolicy | None,
    budget: Mapping[str, float] | None,
    root: Span | None,
) -> AsyncIterator[Lead]:
    overrides: dict[str, object] = {
        k: v for k, v in (("isolation", isolation), ("merge", merge)) if v is not None
    }
    if budget is not None:
        overrides["budget"] = _budget_override(launched.settings.budget, budget)
    if overrides:
        launched.settings = launched.settings.model_copy(update=overrides)
    lead: Lead | None = None
    try:
        launched.session.flush()  # the file exists from the start, so `session=` finds it
        lead = Lead(launched, trace_root=root)
        await launched.attach_host()
        lead._install_tools()
    except BaseException:
        if lead is not None:
            await lead.aclose()
        else:
            launched.session.close()
        raise
    try:
        yield lead
    finally:
        await lead.aclose()
