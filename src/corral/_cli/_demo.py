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
from corral.llm import AssistantMessage, TextContent, ThinkingContent

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


async def run_demo(*, out: TextIO, keep: bool = False) -> int:
    """Run the demo and print its timeline. Returns the process exit code."""
    workdir = Path(tempfile.mkdtemp(prefix="corral-demo-"))
    os.environ["CORRAL_DEMO_PYTHON"] = sys.executable
    try:
        _copy_sample(workdir)
        out.write("corral demo — a scripted agent fixes a failing test with real tools\n")
        out.write(f"project: {workdir} (a copy of the bundled sample)\n")
        out.write("model:   scripted/demo (decisions scripted; every tool runs for real)\n\n")
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
        if keep:
            out.write(f"the fixed project is kept at {workdir}\n")
        return 0
    finally:
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)
