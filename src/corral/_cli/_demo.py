"""`corral demo`: scripted agents work on a copied sample project, in four acts.

Act 1: one agent fixes a failing test (`scripted/demo`). Act 2: a lead with
the `agent` surface delegates to a scout and a reviewer (`scripted/demo-team`).
Act 3: a lead with the `teams` surface runs a review swarm of two read agents
and one edit agent that claims the file it patches (`scripted/demo-teams`).
Act 4 (verification, `scripted/demo-verify`): the project becomes a git
repository with an acceptance test; an edit agent spawned with an assigned
check and one repair attempt has its first report refused by the failing
check, repairs its patch and reports with verification `passed`; then a
grouped read swarm reaches the lead as one compact index.

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
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from corral.agent import AgentEvent, MessageEndEvent, ToolExecutionEndEvent, ToolExecutionStartEvent
from corral.llm import AssistantMessage, CustomMessage, TextContent, ThinkingContent
from corral.orchestration.teams.groups._groups import GROUP_MESSAGE_TYPE
from corral.orchestration.teams.reports._reports import TEAM_REPORT_TYPE

from ._launch import Launched, LaunchOptions, launch_session

if TYPE_CHECKING:
    from corral.lead._host import ComposedHost as Host

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


def _failure_lines(lines: list[str]) -> tuple[str, ...]:
    """The first failed test (`FAIL: name`) and the last error line of a unittest run's output."""
    failures = [line.split("(")[0].strip() for line in lines if line.startswith("FAIL:")]
    reasons = [line.strip() for line in lines if "Error:" in line]
    return (*failures[:1], *reasons[-1:])


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
                for detail in _failure_lines(lines):
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


def _spawned(tool: str, args: dict[str, Any]) -> list[dict[str, Any]]:
    """The fields of each agent a `spawn_agent`/`spawn_swarm_agents` call asks for (swarm defaults merged)."""
    if tool == "spawn_agent":
        return [args]
    raw_defaults, raw_agents = args.get("defaults"), args.get("agents")
    defaults: dict[str, Any] = raw_defaults if isinstance(raw_defaults, dict) else {}
    agents: list[Any] = raw_agents if isinstance(raw_agents, list) else []
    return [{**defaults, **agent} for agent in agents if isinstance(agent, dict)]


def _policies(member: dict[str, Any]) -> str:
    """`, check NAME: COMMAND…, repair ≤N` for a spawn with assigned checks; empty without."""
    checks = member.get("checks")
    parts = [
        f"check {check.get('name')}: {str(check.get('command', '')).replace(sys.executable, 'python')}"
        for check in (checks if isinstance(checks, list) else ())
        if isinstance(check, dict)
    ]
    repair = member.get("repair")
    if isinstance(repair, dict) and repair.get("maxAttempts"):
        parts.append(f"repair ≤{repair['maxAttempts']}")
    return "".join(f", {part}" for part in parts)


class _TeamsTimeline(_Timeline):
    """The lead's view of a teams run: spawns, reports and group indexes as they arrive, its replies."""

    def __init__(self, out: TextIO, host: Host, root: Path) -> None:
        super().__init__(out)
        self.host = host
        self.root = root

    def relative(self, text: str) -> str:
        """`text` with the project directory left out of the paths in it, and `python` for the interpreter."""
        return text.replace(f"{self.root}{os.sep}", "").replace(sys.executable, "python")

    def __call__(self, event: AgentEvent) -> None:
        if isinstance(event, ToolExecutionStartEvent) and event.tool_name in (
            "spawn_agent",
            "spawn_swarm_agents",
        ):
            group = event.args.get("completion_group")
            members = _spawned(event.tool_name, event.args)
            if isinstance(group, dict):
                self.line(
                    f"lead → spawn a completion group of {len(members)} ({group.get('delivery')} delivery)"
                )
            for member in members:
                tier = member.get("model_slot") or "read-review"
                self.line(
                    f"lead → spawn {member.get('name', '?')} ({tier}{_policies(member)}): "
                    f"{_first_line(str(member.get('prompt', '')), 160)}"
                )
        elif isinstance(event, ToolExecutionEndEvent) and event.is_error:
            text = "".join(b.text for b in event.result.content if isinstance(b, TextContent))
            self.line(f"    ✗ lead {event.tool_name}: {_first_line(text)}")
        elif isinstance(event, MessageEndEvent) and isinstance(event.message, CustomMessage):
            message = event.message
            if message.custom_type == TEAM_REPORT_TYPE and isinstance(message.details, dict):
                self._report(message.details)
            elif message.custom_type == GROUP_MESSAGE_TYPE and isinstance(message.details, dict):
                self._index(message.details)
        elif isinstance(event, MessageEndEvent) and isinstance(event.message, AssistantMessage):
            text = event.message.text.strip()
            if text:
                self.line(f"lead: {_first_line(text, 160)}")

    def _report(self, details: dict[str, Any]) -> None:
        name = str(details.get("name"))
        record = self.host.repositories.teams.reports.team_report(str(details.get("report_id")))
        result = None if record is None else record.result
        findings = 0 if result is None else len(result.claims.findings)
        facts = [str(details.get("outcome")), f"{findings} finding{'' if findings == 1 else 's'}"]
        effective = details.get("effective_outcome")
        if effective is not None and effective != details.get("outcome"):
            facts[0] += f" (effective {effective})"
        if result is not None and result.verification.state != "not-requested":
            facts.append(f"verification {result.verification.state}")
        if result is not None and result.repair is not None:
            facts.append(f"repair {result.repair.state}")
        if result is not None and result.claims.changed_paths:
            facts.append("changed " + ", ".join(result.claims.changed_paths))
        summary = record.summary if record is not None and record.summary else ""
        self.line(f"report from {name} ({', '.join(facts)}): {summary}".rstrip(": "))

    def _index(self, details: dict[str, Any]) -> None:
        """A completion group's compact index reached the lead: one wake for the members it covers."""
        count = len(details.get("slot_ids") or ())
        self.line(
            f"group index reaches the lead ({details.get('kind')}): 1 index for {count} "
            f"member{'' if count == 1 else 's'}, one wake"
        )
        delivery = self.host.repositories.teams.groups.group_delivery(str(details.get("delivery_id")))
        try:
            index = json.loads(delivery.index) if delivery is not None else {}
        except ValueError:
            index = {}
        for member in index.get("members") or ():
            facts = ", ".join(
                str(fact) for fact in (member.get("status"), member.get("outcome")) if fact is not None
            )
            summary = f": {_first_line(str(member['summary']), 120)}" if member.get("summary") else ""
            self.line(f"    · {member.get('name')} ({facts}){summary}")


class _MemberTimeline:
    """One spawned agent's tool calls, its claims, its checks and repair, any tool error, on the timeline."""

    def __init__(self, timeline: _TeamsTimeline, name: str, *, grouped: bool = False) -> None:
        self.timeline = timeline
        self.name = name
        self.grouped = grouped
        self.logs: dict[str, str] = {}
        """Log path → check name, from the repair requests this agent got."""
        self.log_reads: set[str] = set()
        """Tool call ids of `read` calls on a check's log (their failure lines are shown)."""

    def __call__(self, event: AgentEvent) -> None:
        if isinstance(event, ToolExecutionStartEvent) and event.tool_name != "report_and_exit":
            args = event.args
            if event.tool_name in ("claim_file", "release_file") and isinstance(args.get("paths"), list):
                brief = ", ".join(str(path) for path in args["paths"])
            elif event.tool_name == "grep":
                brief = f'"{args.get("pattern")}" in {args.get("path", ".")}'
            elif event.tool_name == "read" and args.get("path") in self.logs:
                brief = f"the log of check {self.logs[args['path']]}"
                self.log_reads.add(event.tool_call_id)
            else:
                brief = self.timeline.relative(_brief_args(event.tool_name, args))
            self.timeline.line(f"  {self.name} → {event.tool_name} {brief}")
        elif isinstance(event, ToolExecutionEndEvent):
            text = "".join(b.text for b in event.result.content if isinstance(b, TextContent))
            details = event.result.details if isinstance(event.result.details, dict) else {}
            if event.is_error:
                self.timeline.line(f"    ✗ {self.name}: {_first_line(self.timeline.relative(text))}")
            elif event.tool_name == "report_and_exit":
                self._receipt(details)
            elif event.tool_name == "claim_file" and details.get("granted"):
                self.timeline.line(f"  {self.name} claimed {', '.join(details['granted'])}")
            elif event.tool_name == "claim_file":
                self.timeline.line(f"    ✗ {self.name}: {_first_line(text)}")
            elif event.tool_name == "bash":
                lines = [line for line in text.splitlines() if line.strip()]
                if lines:
                    self.timeline.line(f"    ✓ {self.name}: {lines[-1][:100]}")
            elif event.tool_call_id in self.log_reads:
                for detail in _failure_lines(text.splitlines()):
                    self.timeline.line(f"    {self.name} reads: {detail[:100]}")

    def _receipt(self, details: dict[str, Any]) -> None:
        """What `report_and_exit` answered: a repair request, an accepted verified report, a grouped one."""
        request = details.get("repairRequest")
        verification = details.get("verification")
        state = verification.get("state") if isinstance(verification, dict) else None
        if isinstance(request, dict):
            self.timeline.line(f"  {self.name} → report_and_exit: not accepted, verification {state}")
            for check in request.get("checks") or ():
                log = str(check.get("logPath"))
                self.logs[log] = str(check.get("name"))
                self.timeline.line(
                    f"    ✗ check {check.get('name')} {check.get('state')}: exit code {check.get('exitCode')}"
                )
                self.timeline.line(f"      log: {self.timeline.relative(log)}")
            repair = details.get("repair")
            limit = repair.get("maxAttempts") if isinstance(repair, dict) else "?"
            self.timeline.line(
                f"  repair requested (attempt {request.get('attempt')} of {limit}): {self.name} must make the "
                "check pass, then report again"
            )
        elif details.get("accepted"):
            repair = details.get("repair")
            facts = [f"verification {state}"] if state not in (None, "not-requested") else []
            if isinstance(repair, dict):
                facts.append(f"repair {repair.get('state')}")
            if self.grouped:
                facts.append("held for the group's index")
            if facts:
                self.timeline.line(f"  {self.name} → report_and_exit: accepted, {', '.join(facts)}")


async def _follow_members(host: Host, timeline: _TeamsTimeline) -> None:
    """Subscribe a `_MemberTimeline` to every agent the host starts, until cancelled."""
    seen: set[str] = set()
    while True:
        for child in host.runs.children():
            run_id = child.run_id
            if run_id not in seen:
                seen.add(run_id)
                run = host.teams.child(run_id) if host.has_teams else None
                grouped = run is not None and run.member.group_id is not None
                child.agent.subscribe(_MemberTimeline(timeline, child.label, grouped=grouped))
        await host.wait_for_change()


async def _teams_session(
    workdir: Path,
    out: TextIO,
    *,
    model: str,
    prompt: str,
    outcome: Callable[[Launched, Host, TextIO], int],
) -> int:
    """Prompt a lead on `model` with the `teams` surface in `workdir`, follow the team until it is
    quiet, and return `outcome`'s verdict; close the lead after."""
    launched = launch_session(LaunchOptions(cwd=workdir, model=model, surfaces=["teams"]))
    try:
        await launched.attach_host()
        host = launched.host
        assert host is not None
        await _drive(launched, host, _TeamsTimeline(out, host, workdir), prompt)
        return outcome(launched, host, out)
    finally:
        await launched.aclose()
        launched.session.close()


async def _drive(launched: Launched, host: Host, timeline: _TeamsTimeline, prompt: str) -> None:
    """Prompt the lead and follow it and every agent it spawns until the whole team is quiet."""
    launched.agent.subscribe(timeline)
    follower = asyncio.ensure_future(_follow_members(host, timeline))
    try:
        timeline.line(f"user: {prompt}")
        await launched.agent.prompt(prompt)
        await launched.wait_until_quiet()
    finally:
        follower.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await follower


def _custom_details(launched: Launched, custom_type: str) -> list[dict[str, Any]]:
    """The `details` of each `custom_type` message in the lead's context, oldest first."""
    return [
        m.details
        for m in launched.agent.messages
        if isinstance(m, CustomMessage) and m.custom_type == custom_type and isinstance(m.details, dict)
    ]


async def _teams_act(workdir: Path, out: TextIO) -> int:
    out.write("\nAct 3 — teams: a review swarm of two read agents and an edit agent report to the lead\n\n")
    return await _teams_session(
        workdir,
        out,
        model="scripted/demo-teams",
        prompt="Review invoice.py with a swarm, and guard total() against large discounts.",
        outcome=_teams_outcome,
    )


def _teams_outcome(launched: Launched, host: Host, out: TextIO) -> int:
    delivered = [details.get("report_id") for details in _custom_details(launched, TEAM_REPORT_TYPE)]
    records = [host.repositories.teams.reports.team_report(str(report_id)) for report_id in delivered]
    changed = sorted({path for r in records if r is not None for path in r.result.claims.changed_paths})
    claims = host.repositories.teams.roster.file_claims(launched.session.session_id)
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


_ROUNDING_TEST = """\
import unittest

from invoice import subtotal


class RoundingTest(unittest.TestCase):
    def test_subtotal_is_rounded_to_cents(self) -> None:
        self.assertEqual(subtotal([("pen", 3, 0.1)]), 0.3)
"""
"""Act 4's acceptance test: 3 × 0.1 sums to 0.30000000000000004, which must read 0.3."""

_GITIGNORE = ".corral-home/\n__pycache__/\n"
"""The demo's data root and Python's caches stay out of the source the checks fingerprint."""

_GIT_CONFIG = (
    "-c",
    "init.defaultBranch=main",
    "-c",
    "user.name=corral demo",
    "-c",
    "user.email=demo@corral.invalid",
    "-c",
    "commit.gpgsign=false",
)


async def _make_repository(workdir: Path) -> str | None:
    """Add the acceptance test, then `git init` and commit the project; returns why that failed, else `None`."""
    (workdir / "test_rounding.py").write_text(_ROUNDING_TEST)
    (workdir / ".gitignore").write_text(_GITIGNORE)
    steps = (("init", "-q"), ("add", "-A"), ("commit", "-q", "--no-verify", "-m", "the project before act 4"))
    for args in steps:
        process = await asyncio.create_subprocess_exec(
            "git",
            *_GIT_CONFIG,
            *args,
            cwd=workdir,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        _, stderr = await process.communicate()
        if process.returncode != 0:
            reason = _first_line(stderr.decode(errors="replace")) or f"exit code {process.returncode}"
            return f"git {args[0]}: {reason}"
    return None


async def _verify_act(workdir: Path, out: TextIO) -> int:
    out.write(
        "\nAct 4 — verification: an assigned check sends an edit agent back to repair its patch; "
        "a grouped swarm reports in one index\n\n"
    )
    if shutil.which("git") is None:
        out.write(
            "Act 4 skipped: git is not installed, and assigned checks fingerprint the source with git.\n"
        )
        return 0
    error = await _make_repository(workdir)
    if error is not None:
        out.write(f"Act 4 failed: the project could not become a git repository ({error}).\n")
        return 1
    out.write("project: now a git repository (one commit) with an acceptance test, test_rounding.py\n\n")
    return await _teams_session(
        workdir,
        out,
        model="scripted/demo-verify",
        prompt="Round subtotal() to cents under the test suite as its check, then audit the project.",
        outcome=_verify_outcome,
    )


def _verify_outcome(launched: Launched, host: Host, out: TextIO) -> int:
    """Act 4 holds when the edit agent's one report passed after a repair and the swarm sent one index."""
    reports = _custom_details(launched, TEAM_REPORT_TYPE)
    records = [
        host.repositories.teams.reports.team_report(str(details.get("report_id"))) for details in reports
    ]
    result = records[0].result if len(records) == 1 and records[0] is not None else None
    states = (
        None if result is None else result.verification.state,
        None if result is None or result.repair is None else result.repair.state,
    )
    indexes = _custom_details(launched, GROUP_MESSAGE_TYPE)
    members = sum(len(details.get("slot_ids") or ()) for details in indexes)
    out.write(
        f"\n{len(reports)} report{'' if len(reports) == 1 else 's'} with verification {states[0]}, "
        f"repair {states[1]}; {len(indexes)} {'index' if len(indexes) == 1 else 'indexes'} for "
        f"{members} members reached the lead.\n"
    )
    ok = (
        states == ("passed", "repaired")
        and [details.get("kind") for details in indexes] == ["settled"]
        and members == 3
    )
    if not ok:
        out.write(
            "Act 4 did not hold: it needs verification passed and repair repaired, and one settled index "
            "for 3 members.\n"
        )
    return 0 if ok else 1


def _what_next(kept: Path | None, out: TextIO) -> None:
    """What a newcomer can try after the demo: their own project, the offline tour, the demo's run in the app."""
    out.write("\nWhat to try next:\n")
    out.write("  cd your/project && corral         the terminal app on your own project\n")
    out.write('  corral run --model scripted/tour -p "show me around"\n')
    out.write("                                    an offline tour of any directory (no API key needed)\n")
    out.write("  corral models                     the models your API keys unlock (the default is marked)\n")
    if kept is None:
        out.write("  corral demo --keep                keep the demo project to open its runs in the app\n")
    else:
        out.write(f"  cd {kept} && CORRAL_HOME={kept / '.corral-home'} corral --continue\n")
        out.write(
            "                                    open the demo's last run in the app (/resume for the others)\n"
        )


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
            "models:  scripted/demo, demo-team, demo-teams, demo-verify (decisions scripted; every tool runs for real)\n\n"
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
        if code == 0:
            code = await _verify_act(workdir, out)
        if keep:
            out.write(f"the fixed project is kept at {workdir}\n")
        if code == 0:
            _what_next(workdir if keep else None, out)
        return code
    finally:
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)
