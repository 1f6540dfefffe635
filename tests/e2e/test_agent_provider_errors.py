"""A managed agent that fails because of its provider reports the provider's error in its result.

Through the real `corral run`: a scripted lead delegates; the agent's model fails — a local HTTP
server answering 401, a scripted step that could not be filled (a bad template), a transient error
whose retries run out. The delivered `corral-agent-result` names the provider's error, never only
"Agent produced no assistant text".
"""

from __future__ import annotations

import json

from .conftest import Env, RunCorral

LEAD = """
steps:
  - text: "Delegating."
    tool_calls:
      - {name: agent, args: {action: delegate, definition: DEFN, label: worker, task: "Do it."}}
  - text: "Waiting for the worker."
  - text: "Done."
AGENTS
"""


def _result_messages(stdout: str) -> list[dict]:
    events = [json.loads(line) for line in stdout.splitlines()]
    return [
        e["message"]
        for e in events
        if e.get("type") == "message_end" and e["message"].get("customType") == "corral-agent-result"
    ]


def _run_lead(corral: RunCorral, cli_env: Env, *, definition: str, agents: str) -> dict:
    cli_env.script("lead", LEAD.replace("DEFN", definition).replace("AGENTS", agents))
    done = corral("run", "--mode", "json", "--model", "scripted/lead", "-p", "go")
    assert done.returncode == 0, done.stderr
    results = _result_messages(done.stdout)
    assert len(results) == 1, done.stdout
    return results[0]


def test_a_401_from_the_agents_provider_reaches_the_result(corral: RunCorral, cli_env: Env) -> None:
    from tests.llm.fake_server import FakeProviderServer

    with FakeProviderServer() as server:
        server.queue_error(401, "Incorrect API key provided: sk-bad")
        cli_env.settings(
            f"""
[providers.local]
base_url = "{server.base_url}"
api = "openai-chat"

[[providers.local.models]]
id = "tiny"
"""
        )
        agents = cli_env.config / "corral" / "agents"
        agents.mkdir(parents=True)
        (agents / "remote.md").write_text(
            "---\nname: remote\ndescription: Runs on the local server.\nmodel: local/tiny\n---\nWork.\n"
        )
        result = _run_lead(corral, cli_env, definition="remote", agents="")
    assert result["details"]["status"] == "failed"
    assert "Incorrect API key provided: sk-bad" in result["content"]
    assert "no assistant text" not in result["content"]


def test_a_bad_template_in_the_agents_script_reaches_the_result(corral: RunCorral, cli_env: Env) -> None:
    agents = 'agents:\n  worker:\n    - text: "Value: {{ env.CORRAL_TEST_UNSET_VARIABLE }}"\n'
    result = _run_lead(corral, cli_env, definition="generalist", agents=agents)
    assert result["details"]["status"] == "failed"
    assert "CORRAL_TEST_UNSET_VARIABLE is not set" in result["content"]
    assert "no assistant text" not in result["content"]


def test_exhausted_retries_reach_the_result(corral: RunCorral, cli_env: Env) -> None:
    cli_env.settings("[retry]\nmax_retries = 1\nbase_delay_ms = 1\nmax_delay_ms = 1\n")
    agents = (
        "agents:\n  worker:\n"
        '    - {text: "upstream overloaded (529)", stop: error, error_retryable: true}\n'
        '    - {text: "upstream overloaded (529)", stop: error, error_retryable: true}\n'
    )
    result = _run_lead(corral, cli_env, definition="generalist", agents=agents)
    assert result["details"]["status"] == "failed"
    assert "upstream overloaded (529)" in result["content"]
