"""`corral demo`: scripted agents work on a copied sample project, in three acts.

Act 1: one agent fixes a failing test (`scripted/demo`). Act 2: a lead with
the `agent` surface delegates to a scout and a reviewer (`scripted/demo-team`).
Act 3: a lead with the `teams` surface runs a review swarm of two read agents
and one edit agent that claims the file it patches (`scripted/demo-teams`).

Everything runs for real — the tools read and edit real files and `bash`
runs the real test suite in a temporary directory; only the models'
decisions come from the bundled scripts. No API key or network is needed.

The teams act shows what the agents do as well as what reaches the lead: a
watcher subscribes to each spawned agent as the host registers it. The host
announces a new agent (`Host.wait_for_change`) before the agent's first model
reply can arrive, so the watcher sees every tool call, the claim included.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sys
import tempfile
import time
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from corral.agent import AgentEvent, MessageEndEvent, ToolExecutionEndEvent, ToolExecutionStartEvent
from corral.llm import AssistantMessage, CustomMessage, TextContent, ThinkingContent
from corral.orchestration.teams import TEAM_REPORT_TYPE

from ._launch import Launched, LaunchOptions, launch_session

if TYPE_CHECKING:
    from corral.orchestration import Host

__all__ = ["run_demo"]


def _copy_sample(target: Path) -> None:
    sample = resources.files("corral._demo").joinpath("sample_project")
    for item in sample.iterdir():
        if item.is_file():
            (target / item.name).write_bytes(item.read_bytes())


def _brief_args(name: str, args: dict[str, Any]) -> str:
    if name == "bash":
        return str(args.get("command", "")).replace(sys.executable, "python")
    if "path" in args:
        return str(args["path"])
    return ", ".join(f"{key}={value!r}" for key, value in args.items())[:80]


def _first_line(text: str, limit: int = 100) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:limit]
    return ""


class _Timeline:
    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.started = time.monotonic()

    def line(self, text: str) -> None:
        elapsed = time.monotonic() - self.started
        self.out.write(f"[{elapsed:5.2f}s] {text}\n")
        self.out.flush()

    def __call__(self, event: AgentEvent) -> None:
        if isinstance(event, MessageEndEvent) and isinstance(event.message, AssistantMessage):
            for block in event.message.content:
                if isinstance(block, ThinkingContent) and block.thinking:
                    self.line(f"  (thinking) {_first_line(block.thinking)}")
                elif isinstance(block, TextContent) and block.text.strip():
                    for i, text_line in enumerate(block.text.strip().splitlines()):
                        self.line(("agent: " if i == 0 else "       ") + text_line)
        elif isinstance(event, ToolExecutionStartEvent):
            self.line(f"  → {event.tool_name} {_brief_args(event.tool_name, event.args)}")
        elif isinstance(event, ToolExecutionEndEvent):
            text = "".join(block.text for block in event.result.content if isinstance(block, TextContent))
            text = text.replace(sys.executable, "python")
            lines = [line for line in text.splitlines() if line.strip()]
            if event.is_error:
                exits = [line for line in lines if line.startswith("Command exited with code")]
                failures = [line.split("(")[0].strip() for line in lines if line.startswith("FAIL:")]
                reasons = [line.strip() for line in lines if "Error:" in line]
                for detail in (*failures[:1], *reasons[-1:]):
                    self.line(f"    ✗ {detail[:100]}")
                self.line(f"    ✗ {exits[-1] if exits else _first_line(text)}")
            elif event.tool_name == "bash" and lines:
                self.line(f"    ✓ {lines[-1][:100]}")
            else:
                self.line(f"    ✓ {_first_line(text)}")


class _TeamTimeline(_Timeline):
    """The lead's view of its team: delegations and controls, questions, delivered results."""

    def __call__(self, event: AgentEvent) -> None:
        if isinstance(event, ToolExecutionStartEvent) and event.tool_name == "agent":
            args = event.args
            action = args.get("action")
            if action == "delegate":
                self.line(
                    f"lead → delegate {args.get('definition')} as {args.get('label')}: {args.get('task')}"
                )
            elif action in ("steer", "reply", "interrupt"):
                self.line(f"lead → {action} {args.get('agent')}: {args.get('message')}")
            else:
                self.line(f"lead → {action}")
        elif isinstance(event, ToolExecutionEndEvent) and event.tool_name == "agent" and event.is_error:
            text = "".join(b.text for b in event.result.content if isinstance(b, TextContent))
            self.line(f"    ✗ {_first_line(text)}")
        elif isinstance(event, MessageEndEvent) and isinstance(event.message, CustomMessage):
            message = event.message
            details = message.details if isinstance(message.details, dict) else {}
            if message.custom_type == "corral-agent-ask":
                self.line(f"{details.get('agent')} asks the lead: {details.get('question')}")
            elif message.custom_type == "corral-agent-result":
                body = message.content if isinstance(message.content, str) else ""
                text = body.split("\n", 1)[1].strip() if "\n" in body else body
                self.line(
                    f"result from {details.get('agent')} ({details.get('status')}): {_first_line(text, 160)}"
                )
        elif isinstance(event, MessageEndEvent) and isinstance(event.message, AssistantMessage):
            text = event.message.text.strip()
            if text:
                self.line(f"lead: {_first_line(text, 160)}")


async def _team_act(workdir: Path, out: TextIO) -> int:
    out.write("\nAct 2 — a lead runs a team: two managed agents, a question, a steer, two results\n\n")
    launched = launch_session(LaunchOptions(cwd=workdir, model="scripted/demo-team", surfaces=["agent"]))
    try:
        await launched.attach_host()
        timeline = _TeamTimeline(out)
        launched.agent.subscribe(timeline)
        timeline.line("user: Check the invoice fix with a scout and a reviewer.")
        await launched.agent.prompt("Check the invoice fix with a scout and a reviewer.")
        await launched.wait_until_quiet()
        results = [
            m
            for m in launched.agent.messages
            if isinstance(m, CustomMessage) and m.custom_type == "corral-agent-result"
        ]
        out.write(f"\n{len(results)} results delivered to the lead, each exactly once.\n")
        return 0 if len(results) == 2 else 1
    finally:
        await launched.aclose()
        launched.session.close()


def _spawned(tool: str, args: dict[str, Any]) -> list[tuple[str, str, str]]:
    """`(name, tier, prompt)` of each agent a `spawn_agent`/`spawn_swarm_agents` call asks for."""
    if tool == "spawn_agent":
        members = [args]
    else:
        raw_defaults, raw_agents = args.get("defaults"), args.get("agents")
        defaults: dict[str, Any] = raw_defaults if isinstance(raw_defaults, dict) else {}
        agents: list[Any] = raw_agents if isinstance(raw_agents, list) else []
        members = [{**defaults, **agent} for agent in agents if isinstance(agent, dict)]
    return [
        (str(m.get("name", "?")), str(m.get("model_slot") or "read-review"), str(m.get("prompt", "")))
        for m in members
    ]


class _TeamsTimeline(_Timeline):
    """The lead's view of a teams run: spawns, reports as they arrive (outcome, findings), its replies."""

    def __init__(self, out: TextIO, host: Host) -> None:
        super().__init__(out)
        self.host = host

    def __call__(self, event: AgentEvent) -> None:
        if isinstance(event, ToolExecutionStartEvent) and event.tool_name in (
            "spawn_agent",
            "spawn_swarm_agents",
        ):
            for name, tier, prompt in _spawned(event.tool_name, event.args):
                self.line(f"lead → spawn {name} ({tier}): {_first_line(prompt, 160)}")
        elif isinstance(event, ToolExecutionEndEvent) and event.is_error:
            text = "".join(b.text for b in event.result.content if isinstance(b, TextContent))
            self.line(f"    ✗ lead {event.tool_name}: {_first_line(text)}")
        elif isinstance(event, MessageEndEvent) and isinstance(event.message, CustomMessage):
            message = event.message
            if message.custom_type == TEAM_REPORT_TYPE and isinstance(message.details, dict):
                self._report(message.details)
        elif isinstance(event, MessageEndEvent) and isinstance(event.message, AssistantMessage):
            text = event.message.text.strip()
            if text:
                self.line(f"lead: {_first_line(text, 160)}")

    def _report(self, details: dict[str, Any]) -> None:
        name = str(details.get("name"))
        record = self.host.store.team_report(str(details.get("report_id")))
        result: dict[str, Any] = record.result if record is not None else {}
        findings = len(result.get("findings") or ())
        facts = [str(details.get("outcome")), f"{findings} finding{'' if findings == 1 else 's'}"]
        if result.get("changedPaths"):
            facts.append("changed " + ", ".join(result["changedPaths"]))
        summary = record.summary if record is not None and record.summary else ""
        self.line(f"report from {name} ({', '.join(facts)}): {summary}".rstrip(": "))


class _MemberTimeline:
    """One spawned agent's tool calls, its claims and any tool error, on the shared timeline."""

    def __init__(self, timeline: _Timeline, name: str) -> None:
        self.timeline = timeline
        self.name = name

    def __call__(self, event: AgentEvent) -> None:
        if isinstance(event, ToolExecutionStartEvent) and event.tool_name != "report_and_exit":
            args = event.args
            if event.tool_name in ("claim_file", "release_file") and isinstance(args.get("paths"), list):
                brief = ", ".join(str(path) for path in args["paths"])
            elif event.tool_name == "grep":
                brief = f'"{args.get("pattern")}" in {args.get("path", ".")}'
            else:
                brief = _brief_args(event.tool_name, args)
            self.timeline.line(f"  {self.name} → {event.tool_name} {brief}")
        elif isinstance(event, ToolExecutionEndEvent):
            text = "".join(b.text for b in event.result.content if isinstance(b, TextContent))
            details = event.result.details if isinstance(event.result.details, dict) else {}
            if event.is_error:
                self.timeline.line(
                    f"    ✗ {self.name}: {_first_line(text.replace(sys.executable, 'python'))}"
                )
            elif event.tool_name == "claim_file" and details.get("granted"):
                self.timeline.line(f"  {self.name} claimed {', '.join(details['granted'])}")
            elif event.tool_name == "claim_file":
                self.timeline.line(f"    ✗ {self.name}: {_first_line(text)}")
            elif event.tool_name == "bash":
                lines = [line for line in text.splitlines() if line.strip()]
                if lines:
                    self.timeline.line(f"    ✓ {self.name}: {lines[-1][:100]}")


async def _follow_members(host: Host, timeline: _Timeline) -> None:
    """Subscribe a `_MemberTimeline` to every agent the host starts, until cancelled."""
    seen: set[str] = set()
    while True:
        for run_id, child in list(host.children.items()):
            if run_id not in seen:
                seen.add(run_id)
                child.agent.subscribe(_MemberTimeline(timeline, child.label))
        await host.wait_for_change()


async def _teams_act(workdir: Path, out: TextIO) -> int:
    out.write("\nAct 3 — teams: a review swarm of two read agents and an edit agent report to the lead\n\n")
    launched = launch_session(LaunchOptions(cwd=workdir, model="scripted/demo-teams", surfaces=["teams"]))
    try:
        await launched.attach_host()
        assert launched.host is not None
        return await _run_teams_act(launched, launched.host, out)
    finally:
        await launched.aclose()
        launched.session.close()


async def _run_teams_act(launched: Launched, host: Host, out: TextIO) -> int:
    timeline = _TeamsTimeline(out, host)
    launched.agent.subscribe(timeline)
    follower = asyncio.ensure_future(_follow_members(host, timeline))
    prompt = "Review invoice.py with a swarm, and guard total() against large discounts."
    try:
        timeline.line(f"user: {prompt}")
        await launched.agent.prompt(prompt)
        await launched.wait_until_quiet()
    finally:
        follower.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await follower
    delivered = [
        m.details.get("report_id")
        for m in launched.agent.messages
        if isinstance(m, CustomMessage) and m.custom_type == TEAM_REPORT_TYPE and isinstance(m.details, dict)
    ]
    records = [host.store.team_report(str(report_id)) for report_id in delivered]
    changed = sorted({path for r in records if r is not None for path in r.result.get("changedPaths", ())})
    claims = host.store.file_claims(launched.session.session_id)
    once = len(delivered) == len(set(delivered))
    out.write(
        f"\n{len(delivered)} reports delivered to the lead{', each exactly once' if once else ' (some twice)'}"
        f"{'; changed: ' + ', '.join(changed) if changed else ''}"
        f"; {'no file claims left' if not claims else f'{len(claims)} file claims left'}.\n"
    )
    ok = (
        once
        and len(delivered) == 3
        and all(r is not None and r.outcome == "succeeded" for r in records)
        and not claims
    )
    return 0 if ok else 1


async def run_demo(*, out: TextIO, keep: bool = False) -> int:
    """Run the demo and print its timeline. Returns the process exit code."""
    workdir = Path(tempfile.mkdtemp(prefix="corral-demo-"))
    os.environ["CORRAL_DEMO_PYTHON"] = sys.executable
    # The demo's sessions and agent store live with the copied project, not in your data root.
    os.environ["CORRAL_HOME"] = str(workdir / ".corral-home")
    try:
        _copy_sample(workdir)
        out.write("corral demo — a scripted agent fixes a failing test with real tools\n")
        out.write(f"project: {workdir} (a copy of the bundled sample)\n")
        out.write(
            "models:  scripted/demo, demo-team, demo-teams (decisions scripted; every tool runs for real)\n\n"
        )
        out.write("Act 1 — one agent fixes a failing test\n\n")
        launched = launch_session(LaunchOptions(cwd=workdir, model="scripted/demo", no_session=True))
        timeline = _Timeline(out)
        launched.agent.subscribe(timeline)
        timeline.line("lead:  Fix the failing test in this project.")
        await launched.agent.prompt("Fix the failing test in this project.")
        last = launched.agent.messages[-1] if launched.agent.messages else None
        failed = isinstance(last, AssistantMessage) and last.stop_reason in ("error", "aborted")
        out.write("\n")
        if failed:
            assert isinstance(last, AssistantMessage)
            out.write(f"demo failed: {last.error_message}\n")
            return 1
        stats = launched.agent.stats()
        out.write(
            f"done: {stats.tool_calls} tool calls, {stats.assistant_messages} model replies, "
            f"{stats.tokens.total} tokens (estimated by the scripted model)\n"
        )
        code = await _team_act(workdir, out)
        if code == 0:
            code = await _teams_act(workdir, out)
        if keep:
            out.write(f"the fixed project is kept at {workdir}\n")
        return code
    finally:
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)
