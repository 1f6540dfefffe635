"""Golden suite: session files in Pi's formats, and the exact provider request corral sends next.

Each `golden/<name>.jsonl` is a session as Pi 0.73 or Pi 1.x writes it (torn
last lines, lone surrogates, unknown values, `context_edit`, ...). The test
opens a copy for writing (which repairs a torn tail), appends the prompt
`continue`, builds the context exactly as the agent does, sends it through the
real provider code to a fake server on 127.0.0.1, and compares what the server
received with `golden/<name>.<api>.json`.

The expected requests follow Pi's own conversion (`transformMessages` and the
provider's `convertMessages` in pi-ai): thinking replayed in the field its
signature names (Chat Completions) or as a signed block (Anthropic), unsigned
thinking dropped (Chat) or sent as text (Anthropic), failed tool results as
their plain text, lone surrogates removed, unknown blocks left out, hidden and
replaced messages per `context_edit`.

Set `CORRAL_UPDATE_GOLDEN=1` to rewrite the expected files (then review the diff).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from corral.llm import ApiKind, LlmContext, ModelInfo, StreamOptions, TextContent, UserMessage
from corral.llm._providers import create_provider_model
from corral.session import SessionManager, convert_to_llm
from tests.llm.fake_server import FakeProviderServer

GOLDEN = Path(__file__).parent / "golden"
SYSTEM = "You are a test."

CASES: list[tuple[str, ApiKind]] = [
    ("pi073_thinking_chat", "openai-chat"),
    ("pi073_thinking_chat", "anthropic"),
    ("torn_last_line", "openai-chat"),
    ("pi073_no_final_newline", "openai-chat"),
    ("surrogates", "openai-chat"),
    ("unknown_values", "openai-chat"),
    ("pi16_context_edit", "openai-chat"),
    ("anthropic_thinking", "anthropic"),
]


def _sent(body: dict[str, Any], api: ApiKind) -> dict[str, Any]:
    if api == "anthropic":
        return {"system": body.get("system"), "messages": body["messages"]}
    return {"messages": body["messages"]}


async def _request_for(path: Path, api: ApiKind) -> dict[str, Any]:
    manager = SessionManager.open(path)
    try:
        manager.append_message(
            UserMessage(content=[TextContent(text="continue")], timestamp=1_777_629_700_000)
        )
        context = manager.build_context()
    finally:
        manager.close()
    info = ModelInfo("fake", "fake-model-1", api, reasoning=True, input=("text", "image"))
    with FakeProviderServer() as server:
        server.queue_text("ok")
        model = create_provider_model(
            info,
            api_key="sk-test",
            base_url=server.url if api == "anthropic" else server.base_url,
            streaming=True,
        )
        llm_context = LlmContext(SYSTEM, convert_to_llm(context.messages))

        async def drain() -> None:
            async for _ in model.stream(llm_context, StreamOptions()):
                pass

        await asyncio.wait_for(drain(), 30)
        return _sent(server.requests[0].body, api)


@pytest.mark.parametrize(("name", "api"), CASES, ids=[f"{n}-{a}" for n, a in CASES])
async def test_next_request_matches_golden(name: str, api: ApiKind, tmp_path: Path) -> None:
    path = tmp_path / f"{name}.jsonl"
    shutil.copy(GOLDEN / f"{name}.jsonl", path)
    sent = await _request_for(path, api)
    expected_path = GOLDEN / f"{name}.{api}.json"
    if os.environ.get("CORRAL_UPDATE_GOLDEN") == "1":
        expected_path.write_text(json.dumps(sent, indent=1, ensure_ascii=False) + "\n")
    expected = json.loads(expected_path.read_text())
    assert sent == expected
    # The file corral appended to still parses line by line, and the prompt follows the last valid entry.
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b""
    for line in lines[:-1]:
        json.loads(line)
