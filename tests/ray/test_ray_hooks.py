"""The user's hooks bind an agent on a Ray node too: the settings travel in its launch, and the worker
installs the same gate (corral/_compose.py, `WorkerComposition.child`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from corral.orchestration import RESULT_TYPE
from corral.orchestration.surfaces import DelegateParams
from corral.settings import HooksSettings
from tests.orchestration._host_helpers import team, write_script
from tests.ray.conftest import RayTestCluster
from tests.ray.test_ray_agents import LEAD, env, ray_settings

__all__ = ["env"]


async def test_a_deny_hook_blocks_a_ray_agent_s_call(env: Path, ray_cluster: RayTestCluster) -> None:
    script = env / "no-bash.py"
    script.write_text(
        "import json, sys\n"
        "event = json.load(sys.stdin)\n"
        f"open({str(env / 'event.json')!r}, 'w').write(json.dumps(event))\n"
        "sys.stderr.write('no bash on ' + event['agent_label'])\n"
        "sys.exit(2)\n"
    )
    agent = [
        {"tool_calls": [{"name": "bash", "args": {"command": "echo hi > made-by-ray.txt"}}]},
        {"text": "saw: {{ last_tool_output }}"},
    ]
    write_script(env, "team", {**LEAD, "agents": {"*": agent}})
    hooks = {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": f"{sys.executable} {script}"}]}
        ]
    }
    settings = ray_settings(ray_cluster).model_copy(update={"hooks": HooksSettings.model_validate(hooks)})
    async with team(env, "team", settings=settings) as t:
        started = await t.controller.delegate(
            t.caller, DelegateParams(definition="builder", task="Make it", label="maker")
        )
        generation = t.host.kernel.get_generation(started.run_id)
        assert generation is not None and generation.runtime_kind == "ray"
        await t.quiet()
        [result] = t.lead_entries(RESULT_TYPE)
        assert "saw: bash was not run: no bash on maker" in result["content"]
    assert not (env / "work" / "made-by-ray.txt").exists()
    event = json.loads((env / "event.json").read_text())
    assert (event["agent_id"], event["agent_type"]) == (started.run_id, "builder")
    assert event["parent_agent_id"] == t.caller.session_id


async def test_a_definition_s_rules_bind_a_ray_agent(env: Path, ray_cluster: RayTestCluster) -> None:
    """The definition's `permissions:` cross in the launch (the node reads no definition)."""
    (env / "config" / "agents" / "builder.md").write_text(
        "---\nname: builder\ndescription: Runs commands.\ntools: [read, bash]\n"
        "permissions:\n  deny: ['Bash(echo:*)']\n---\nRun what you are asked.\n"
    )
    agent = [
        {"tool_calls": [{"name": "bash", "args": {"command": "echo hi > made-by-ray.txt"}}]},
        {"text": "saw: {{ last_tool_output }}"},
    ]
    write_script(env, "team", {**LEAD, "agents": {"*": agent}})
    async with team(env, "team", settings=ray_settings(ray_cluster)) as t:
        started = await t.controller.delegate(t.caller, DelegateParams(definition="builder", task="Make it"))
        generation = t.host.kernel.get_generation(started.run_id)
        assert generation is not None and generation.runtime_kind == "ray"
        await t.quiet()
        [result] = t.lead_entries(RESULT_TYPE)
    assert (
        "saw: bash was not run: the permission rule `Bash(echo:*)` of definition `builder` denies it"
        in result["content"]
    )
    assert not (env / "work" / "made-by-ray.txt").exists()
