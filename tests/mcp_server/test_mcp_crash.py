"""A `corral mcp` killed (SIGKILL) between `agent_delegate` and `wait`, restarted with `--continue`,
delivers the result exactly once: `wait` neither repeats nor skips across the restart."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from .conftest import WAIT_MS, McpEnv
from .conftest import items as _items


@pytest.mark.parametrize("fault", ["after_result_row", "after_owner_append", "before_cleanup"])
async def test_a_killed_server_delivers_the_result_once_after_continue(mcp_env: McpEnv, fault: str) -> None:
    mcp_env.script({"*": [{"text": "agent result", "delay_ms": 500}]})  # answers after delegate returned
    seen: list[dict[str, Any]] = []
    request_id = None
    with contextlib.suppress(Exception):  # the server dies under the client: its calls fail
        async with mcp_env.client(env={"CORRAL_FAULTS": fault}) as client:
            started = await client.call_tool(
                "agent_delegate", {"definition": "scout", "task": "x", "label": "k1"}
            )
            request_id = started.structured_content["request_id"]  # type: ignore[index]
            seen += _items(await client.call_tool("wait", {"timeoutMs": WAIT_MS}))
            seen += _items(await client.call_tool("wait", {"timeoutMs": WAIT_MS}))  # never answered: it died
    assert request_id is not None
    async with mcp_env.client("--continue") as client:
        seen += _items(await client.call_tool("wait", {"timeoutMs": 0 if seen else WAIT_MS}))
        assert _items(await client.call_tool("wait", {"timeoutMs": 0})) == []
    async with mcp_env.client("--continue") as client:
        assert _items(await client.call_tool("wait", {"timeoutMs": 0})) == []
    assert [item["details"]["request_id"] for item in seen] == [request_id]
