"""Whole scenarios against the real scripted model, real tools and real session files."""

from __future__ import annotations

import asyncio
import os
import textwrap
from pathlib import Path

from corral.agent import AgentSession
from corral.agent.tools import create_builtin_tools
from corral.llm import AssistantMessage, ModelInfo, ScriptedModel
from corral.session import SessionManager

from .helpers import Recorder, SleepRecorder, wait


def _script(cwd: Path, name: str, body: str) -> ScriptedModel:
    scripts = cwd / ".corral" / "scripts"
    scripts.mkdir(parents=True, exist_ok=True)
    (scripts / f"{name}.yaml").write_text(textwrap.dedent(body))
    info = ModelInfo("scripted", name, "scripted", context_window=200_000, max_tokens=32_000, reasoning=True)
    # $CORRAL_SCRIPTS: a project's own .corral/scripts/ count only once the project is trusted
    return ScriptedModel(info, cwd=cwd, environ={**os.environ, "CORRAL_SCRIPTS": str(scripts)})


def _agent(tmp_path: Path, model: ScriptedModel, **kwargs: object) -> tuple[AgentSession, Recorder]:
    cwd = model_cwd(tmp_path)
    session = SessionManager.create(cwd, sessions_root=tmp_path / "sessions")
    agent = AgentSession(
        session=session,
        model=model,
        thinking_level="medium",
        tools=create_builtin_tools(cwd),
        cwd=cwd,
        **kwargs,  # type: ignore[arg-type]
    )
    recorder = Recorder()
    agent.subscribe(recorder)
    return agent, recorder


def model_cwd(tmp_path: Path) -> Path:
    cwd = tmp_path / "proj"
    cwd.mkdir(exist_ok=True)
    return cwd


async def test_read_then_answer_with_expectations(tmp_path: Path) -> None:
    cwd = model_cwd(tmp_path)
    (cwd / "README.md").write_text("corral readme\n")
    model = _script(
        cwd,
        "readme",
        """
        steps:
          - text: "Looking at the README first."
            tool_calls:
              - name: read
                args: {path: README.md}
            expect:
              last_user_contains: "README"
              tools_include: [read, bash]
          - text: "The README says: corral readme"
            expect:
              context_contains: ["corral readme"]
        """,
    )
    agent, rec = _agent(tmp_path, model)
    await wait(agent.prompt("Summarise the README"))
    assert agent.last_assistant_text() == "The README says: corral readme"
    assert rec.types().count("turn_start") == 2
    path = agent.session.path
    assert path is not None
    agent.session.close()
    reopened = SessionManager.open(path, read_only=True)
    roles = [m.role for m in reopened.build_context().messages]
    assert roles == ["user", "assistant", "toolResult", "assistant"]


async def test_retryable_script_error_retries_and_cursor_moves_on(tmp_path: Path) -> None:
    cwd = model_cwd(tmp_path)
    model = _script(
        cwd,
        "flaky",
        """
        steps:
          - text: "overloaded"
            stop: error
            error_retryable: true
          - text: "second try worked"
        """,
    )
    sleep = SleepRecorder()
    agent, rec = _agent(tmp_path, model, sleep=sleep)
    await wait(agent.prompt("go"))
    assert len(sleep.delays) == 1 and 2.0 <= sleep.delays[0] <= 2.5  # back-off plus jitter
    assert agent.last_assistant_text() == "second try worked"
    assert rec.of("auto_retry_end")[0].success


async def test_abort_during_scripted_delay_then_continue_with_next_prompt(tmp_path: Path) -> None:
    cwd = model_cwd(tmp_path)
    model = _script(
        cwd,
        "slow",
        """
        steps:
          - text: "too slow"
            delay_ms: 60000
          - text: "quick answer"
        """,
    )
    agent, rec = _agent(tmp_path, model)
    task = asyncio.create_task(agent.prompt("first"))
    while "message_start" not in [t for t in rec.types()[3:]]:
        await wait(asyncio.sleep(0))
    await wait(agent.abort())
    await wait(task)
    aborted = agent.messages[-1]
    assert isinstance(aborted, AssistantMessage) and aborted.stop_reason == "aborted"
    await wait(agent.prompt("second"))
    assert agent.last_assistant_text() == "quick answer"
