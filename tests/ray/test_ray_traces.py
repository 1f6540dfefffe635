"""Traces across a Ray worker: the agent's spans, written by the worker actor's process, continue the
host's trace under the span current when the host delegated (the lead's tool call)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from corral import _tracing
from corral.orchestration.surfaces import DelegateParams
from tests._waits import eventually
from tests.orchestration._host_helpers import team, write_script
from tests.ray.conftest import RayTestCluster
from tests.ray.test_ray_agents import LEAD, env, ray_settings

__all__ = ["env"]


@pytest.fixture
def traced(tmp_path: Path) -> Iterator[Path]:
    _tracing.shutdown()
    yield tmp_path / "trace.jsonl"
    _tracing.shutdown()


async def test_a_ray_agent_continues_the_hosts_trace(
    env: Path, ray_cluster: RayTestCluster, traced: Path
) -> None:
    agent = [{"tool_calls": [{"name": "ls", "args": {}}]}, {"text": "Listed."}]
    write_script(env, "team", {**LEAD, "agents": {"*": agent}})
    tracer = _tracing.setup(file=traced, environ={})
    assert tracer is not None
    async with team(env, "team", settings=ray_settings(ray_cluster)) as t:
        with _tracing.span("execute_tool agent", {"corral.agent": "lead"}):
            call = tracer.traceparent()
            started = await t.controller.delegate(
                t.caller, DelegateParams(definition="scout", task="List", label="rayed")
            )
        await t.quiet()
    assert call is not None
    _, trace_id, span_id, _ = call.split("-")
    generation = started.run_id
    # The worker writes its agent's spans when the agent's span ends, from its own process.
    await eventually(lambda: traced.exists() and '"name":"invoke_agent rayed"' in traced.read_text())
    lines = [json.loads(line) for line in traced.read_text().splitlines()]
    [agent_span] = [d for d in lines if d["name"] == "invoke_agent rayed"]
    assert agent_span["attributes"]["corral.runtime"] == "ray"
    assert agent_span["attributes"]["corral.run_id"] == generation
    assert agent_span["context"]["trace_id"] == f"0x{trace_id}"
    assert agent_span["parent_id"] == f"0x{span_id}"
    turns = [
        d for d in lines if d["name"] == "corral.turn" and d["parent_id"] == agent_span["context"]["span_id"]
    ]
    assert len(turns) == 2 and all(t["attributes"]["corral.agent"] == "rayed" for t in turns)
    turn_ids = {t["context"]["span_id"] for t in turns}
    assert sum(1 for d in lines if d["name"] == "execute_tool ls" and d["parent_id"] in turn_ids) == 1
