"""`corral demo`: a scripted agent fixes a failing test in a copied sample project.

Everything runs for real — the tools read and edit real files and `bash`
runs the real test suite in a temporary directory; only the model's
decisions come from the bundled script `scripted/demo`. No API key or network
is needed.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from importlib import resources
from pathlib import Path
from typing import Any, TextIO

from corral.agent import AgentEvent, MessageEndEvent, ToolExecutionEndEvent, ToolExecutionStartEvent
from corral.llm import AssistantMessage, CustomMessage, TextContent, ThinkingContent

from ._launch import LaunchOptions, launch_session

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
        out.write("model:   scripted/demo (decisions scripted; every tool runs for real)\n\n")
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
        if keep:
            out.write(f"the fixed project is kept at {workdir}\n")
        return code
    finally:
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)
