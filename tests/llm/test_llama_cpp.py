"""Against a real llama.cpp server: llama-cpp-python's OpenAI-compatible server on 127.0.0.1 with
SmolLM2-135M-Instruct and a 2,048-token window, configured by docs/settings.md's llama.cpp block.

The server is built by `tests/llm/llama_server.py` (see there). Without a build this module skips
locally, naming the command; under `CI=true` it builds (`.ci/run` already did) and never skips.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
import tomllib
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from corral.llm import (
    AssistantMessage,
    AssistantMessageEvent,
    LlmContext,
    Model,
    ModelRegistry,
    StreamOptions,
    TextContent,
    ToolDefinition,
    ToolResultMessage,
    UserMessage,
)
from corral.settings import Settings
from tests.agent.helpers import EchoTool, Harness
from tests.llm import llama_server

from ._provider_contract import final

pytestmark = pytest.mark.timeout(900)

WINDOW = 2048
SLOW = 600.0
"""Bound on one request: a 135M model on two busy cores is slow, never this slow."""
DOCS = Path(__file__).resolve().parents[2] / "docs" / "settings.md"
CORRAL = str(Path(sys.executable).with_name("corral"))


def docs_block() -> str:
    """The llama.cpp settings block of docs/settings.md, as a user would copy it."""
    text = DOCS.read_text()
    match = re.search(r"```toml\n(# llama\.cpp\n.*?)```", text, re.DOTALL)
    assert match is not None, "docs/settings.md lost its llama.cpp block"
    return match.group(1)


def settings_text(base_url: str, *, max_tokens: int = 1024, extra: str = "") -> str:
    """The docs block pointed at the test server, with this server's window and `max_tokens`."""
    block = docs_block()
    block = re.sub(r'base_url = "[^"]*"', f'base_url = "{base_url}"', block)
    block = re.sub(r"context_window = \d+", f"context_window = {WINDOW}", block)
    block = re.sub(r"max_tokens = \d+", f"max_tokens = {max_tokens}", block)
    tomllib.loads(block)  # still valid TOML
    return extra + block


def settings(base_url: str, **changes: Any) -> Settings:
    data = tomllib.loads(settings_text(base_url, max_tokens=changes.pop("max_tokens", 1024)))
    data["providers"]["llamacpp"].update(changes)
    return Settings.model_validate(data)


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/models", timeout=5) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[llama_server.LlamaServer]:
    if not llama_server.is_built():
        if os.environ.get("CI") != "true":
            pytest.skip("llama.cpp server not built: run `python tests/llm/llama_server.py build` (~9 min)")
        missing = llama_server.missing_tools()
        if missing:
            pytest.fail(f"CI cannot build llama-cpp-python: missing {', '.join(missing)}")
        try:
            llama_server.build()
        except (SystemExit, subprocess.CalledProcessError, OSError) as exc:
            pytest.fail(f"CI could not build the llama.cpp server: {exc}")
    log = tmp_path_factory.mktemp("llama") / "server.log"
    running = llama_server.start(log, n_ctx=WINDOW, alias="local")
    try:
        deadline = time.monotonic() + 180
        while not _ready(running.base_url):
            if running.process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"llama.cpp server did not start:\n{log.read_text()[-3000:]}")
            time.sleep(0.2)
        yield running
    finally:
        running.process.terminate()
        try:
            running.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            running.process.kill()
            running.process.wait()


async def collect(
    model: Model, context: LlmContext, options: StreamOptions | None = None
) -> list[AssistantMessageEvent]:
    async def run() -> list[AssistantMessageEvent]:
        return [event async for event in model.stream(context, options or StreamOptions())]

    return await asyncio.wait_for(run(), SLOW)


def _model(server: llama_server.LlamaServer, **changes: Any) -> Any:
    registry = ModelRegistry(settings(server.base_url, **changes), environ={})
    return registry.create_model(registry.resolve("llamacpp/local"))


def _corral(tmp_path: Path, server: llama_server.LlamaServer, *args: str) -> subprocess.CompletedProcess[str]:
    config = tmp_path / "config" / "corral"
    config.mkdir(parents=True, exist_ok=True)
    (config / "settings.toml").write_text(
        settings_text(server.base_url, max_tokens=64, extra='default_model = "llamacpp/local"\n\n')
    )
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "CORRAL_", "XDG_"))
    }
    env.update(
        CORRAL_HOME=str(tmp_path / "home"),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        XDG_DATA_HOME=str(tmp_path / "data"),
        HOME=str(tmp_path / "userhome"),
    )
    return subprocess.run(
        [CORRAL, *args],
        cwd=project,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


# --- the tests ---------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
async def test_a_capped_reply_stops_at_the_cap(server: llama_server.LlamaServer, stream: bool) -> None:
    model = _model(server, max_tokens=12, stream=stream)
    try:
        context = LlmContext(
            "You are a storyteller.", [UserMessage(content="Tell a very long story about a cat.")]
        )
        reply = final(await collect(model, context))
    finally:
        await model.aclose()
    assert reply.stop_reason == "length", reply.error_message
    assert reply.text.strip()
    if not stream:  # the streamed replies of this server carry no usage
        assert reply.usage.output == 12


@pytest.mark.parametrize("stream", [True, False])
async def test_a_forced_tool_call_round_trip(server: llama_server.LlamaServer, stream: bool) -> None:
    echo = EchoTool()
    tool = ToolDefinition(echo.name, echo.description, echo.parameters)
    model = _model(server, max_tokens=48, stream=stream)
    try:
        question = UserMessage(content="Echo the word hello.")
        first = final(
            await collect(
                model, LlmContext("Use the tools.", [question], [tool]), StreamOptions(tool_choice="echo")
            )
        )
        assert first.stop_reason in ("toolUse", "stop", "length"), first.error_message
        [call] = first.tool_calls
        # The server repeats the name in every streamed chunk: still one name.
        assert call.name == "echo"
        assert call.raw_arguments is None and isinstance(call.arguments.get("text"), str)
        result = ToolResultMessage(
            tool_call_id=call.id, tool_name="echo", content=[TextContent(text=call.arguments["text"])]
        )
        second = final(await collect(model, LlmContext("Use the tools.", [question, first, result], [tool])))
    finally:
        await model.aclose()
    assert second.stop_reason in ("stop", "length"), second.error_message
    assert isinstance(second, AssistantMessage)


def test_an_unrecoverable_overflow_exits_1_with_a_clear_message(
    server: llama_server.LlamaServer, tmp_path: Path
) -> None:
    done = _corral(
        tmp_path, server, "run", "--surfaces", "", "-p", "Summarise this: " + "lorem ipsum " * 1500
    )
    assert done.returncode == 1, done.stderr
    assert done.stdout == ""
    assert "no longer fits the 2,048-token context window of llamacpp/local" in done.stderr
    assert "maximum context length is 2048 tokens" in done.stderr


def test_the_teams_surface_on_a_2k_window_fails_clearly(
    server: llama_server.LlamaServer, tmp_path: Path
) -> None:
    done = _corral(tmp_path, server, "run", "--surfaces", "teams", "-p", "hi")
    assert done.returncode == 1
    assert done.stdout == ""
    assert "more than the 2,048-token context window of llamacpp/local" in done.stderr


def test_a_plain_prompt_answers_through_the_documented_block(
    server: llama_server.LlamaServer, tmp_path: Path
) -> None:
    done = _corral(tmp_path, server, "run", "--surfaces", "", "-p", "Say hello.")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()


async def test_usage_less_replies_keep_a_sane_context_estimate(
    server: llama_server.LlamaServer, tmp_path: Path
) -> None:
    model = _model(server, max_tokens=24, stream=True)  # streamed replies carry no usage here
    agent, _ = Harness(tmp_path).agent(model, tools=[EchoTool()], system_prompt="You are brief. " * 20)
    try:
        await asyncio.wait_for(agent.prompt("Say hello."), SLOW)
    finally:
        await model.aclose()
    reply = agent.last_reply
    assert reply is not None and reply.stop_reason in ("stop", "length"), reply and reply.error_message
    assert reply.usage.total_tokens == 0
    usage = agent.context_usage()
    assert usage is not None and usage.tokens is not None
    # Not 0: the messages plus corral's own prompt and tool schema.
    assert usage.tokens >= agent.context_overhead().tokens + 3
    assert 0 < usage.tokens < WINDOW
    json.dumps(usage.model_dump())


def test_doctor_checks_the_server_without_a_prompt(server: llama_server.LlamaServer, tmp_path: Path) -> None:
    done = _corral(tmp_path, server, "doctor", "--json")
    checks = [c for c in json.loads(done.stdout)["checks"] if c["name"] == "endpoint"]
    assert [c["status"] for c in checks] == ["ok", "ok"], checks
    assert "lists local" in checks[0]["message"]
    assert (
        "speaks openai-chat" in checks[1]["message"]
        and "openai-responses" not in checks[1]["message"].split("(configured")[0]
    )
