"""corral against the real Pi (npm): the next provider request for one session file, and Pi's RpcClient.

Runs when `node` and `npm` are on PATH (skips with the reason otherwise; CI installs
them). Pi 0.73.1 (`@mariozechner/pi-coding-agent`) and Pi 1.6.0
(`@earendil-works/pi-coding-agent`, on Node 22 from npm when the system's Node
is older) are installed once into a cache outside the repository (`_pi_real.py`).

1. Request parity: Pi and corral each continue a copy of the same fixture
   session (`fixtures/pi_context.jsonl`: thinking, parallel tool calls, a failed
   tool result, a user `bash` run) with the prompt "next question" against one
   fake OpenAI-compatible server on 127.0.0.1; the two Chat Completions
   requests are compared. The system prompt and the tool descriptions are
   each program's own and are not compared; every other difference must be in
   the version's documented set below — a new difference, or one that is fixed,
   fails the test, so the set always says exactly where corral stands.
2. RPC: Pi's own `RpcClient` (a tiny Node shim imports it from the installed
   package) starts `corral run --mode rpc` as if it were Pi and calls every
   method it has; `stop()` (SIGTERM) must end corral with 143.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.e2e._pi_real import CORRAL_LOCAL_SETTINGS, PiInstall, pi_073, pi_1x, write_pi_models
from tests.e2e.conftest import CORRAL, Env

FIXTURE = Path(__file__).parent / "fixtures" / "pi_context.jsonl"
SHIM = Path(__file__).parent / "pi_shim"
PROMPT_ARGS = ("--provider", "local", "--model", "tiny", "-p", "next question")
CORRAL_ARGS = ("--surfaces", "", "--tools", "read,bash,edit,write")
"""Pi's four default tools, no orchestration surface: the same offer as Pi's."""

_COMMON = {
    # corral's Chat Completions provider (pydantic-ai's OpenAI client) versus Pi's pi-ai:
    "store: only Pi sends it (false)",
    'tool_choice: only corral sends it ("auto")',
    "tools.bash.function.parameters.additionalProperties: only corral sends it (false)",
    "tools.read.function.parameters.additionalProperties: only corral sends it (false)",
    "tools.write.function.parameters.additionalProperties: only corral sends it (false)",
    # A custom provider's default `max_tokens_field` is `max_tokens`; Pi's openai-completions sends
    # `max_completion_tokens` (settings: `max_tokens_field = "max_completion_tokens"` matches it).
    "max_completion_tokens: only Pi sends it (1024)",
    "max_tokens: only corral sends it (1024)",
    # A custom Chat Completions provider gets a text-only user message as one string (llama.cpp's chat
    # templates fail on lists of parts); Pi sends the list. Same text, another wire form.
    'messages[1].content: Pi [{"text": "Read notes.txt and missing.txt.", "type": "text"}] / '
    'corral "Read notes.txt and missing.txt."',
    'messages[6].content: Pi [{"text": "Ran `echo hi`\\n```\\nhi\\n\\n```", "type": "text"}] / '
    'corral "Ran `echo hi`\\n```\\nhi\\n\\n```"',
    'messages[7].content: Pi [{"text": "next question", "type": "text"}] / corral "next question"',
    # corral's edit tool takes Pi's edits[] or the single oldText/newText pair, so only `path` is required.
    'tools.edit.function.parameters.required: Pi ["path", "edits"] / corral ["path"]',
    'tools.edit.function.parameters.properties.newText: only corral sends it ({"type": "string"})',
    'tools.edit.function.parameters.properties.oldText: only corral sends it ({"type": "string"})',
}
KNOWN_DIFFERENCES: dict[str, set[str]] = {
    "0.73.1": _COMMON
    | {
        # Pi 0.73 sends the system prompt of a reasoning model as `developer` (1.x as `system`, like corral),
        # marks each tool `strict: false`, and closes the edits[] items.
        'messages[0].role: Pi "developer" / corral "system"',
        "tools.bash.function.strict: only Pi sends it (false)",
        "tools.edit.function.strict: only Pi sends it (false)",
        "tools.read.function.strict: only Pi sends it (false)",
        "tools.write.function.strict: only Pi sends it (false)",
        "tools.edit.function.parameters.properties.edits.items.additionalProperties: only Pi sends it (false)",
    },
    "1.6.0": _COMMON | {"tools.edit.function.parameters.additionalProperties: only corral sends it (false)"},
}
"""Where corral's request still differs from Pi's for the fixture (path: what Pi sends / what corral sends).

Both programs get Pi's four default tools (`read bash edit write`; corral's default is all seven).
"""


@pytest.fixture(scope="module", params=["0.73.1", "1.6.0"])
def pi(request: pytest.FixtureRequest) -> PiInstall:
    return pi_073() if request.param == "0.73.1" else pi_1x()


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= 100 else text[:97] + "..."


def _diff(path: str, pi: Any, corral: Any, out: set[str]) -> None:
    if isinstance(pi, dict) and isinstance(corral, dict):
        for key in sorted(set(pi) | set(corral)):
            where = f"{path}.{key}" if path else key
            if key not in corral:
                out.add(f"{where}: only Pi sends it ({_short(pi[key])})")
            elif key not in pi:
                out.add(f"{where}: only corral sends it ({_short(corral[key])})")
            else:
                _diff(where, pi[key], corral[key], out)
    elif isinstance(pi, list) and isinstance(corral, list) and len(pi) == len(corral):
        for index, (a, b) in enumerate(zip(pi, corral, strict=True)):
            _diff(f"{path}[{index}]", a, b, out)
    elif pi != corral:
        out.add(f"{path}: Pi {_short(pi)} / corral {_short(corral)}")


def _drop_descriptions(schema: Any) -> None:
    if isinstance(schema, dict):
        if isinstance(schema.get("description"), str):
            del schema["description"]
        for value in schema.values():
            _drop_descriptions(value)
    elif isinstance(schema, list):
        for value in schema:
            _drop_descriptions(value)


def _comparable(body: dict[str, Any], cwd: Path) -> dict[str, Any]:
    """The request without what each program writes itself (the system prompt text, tool descriptions),
    tools keyed by name, and the test's directory spelled `@CWD@`."""
    body = json.loads(json.dumps(body).replace(json.dumps(str(cwd))[1:-1], "@CWD@"))
    messages = body.get("messages", [])
    if messages and messages[0].get("role") in ("system", "developer"):
        messages[0]["content"] = "<system prompt>"
    tools: dict[str, Any] = {}
    for tool in body.pop("tools", []):
        function = tool.get("function", {})
        function.pop("description", None)
        _drop_descriptions(function.get("parameters"))
        tools[function.get("name", "?")] = tool
    body["tools"] = tools
    return body


def _session_copy(env: Env, name: str) -> Path:
    target = env.root / name
    target.write_text(FIXTURE.read_text().replace("@CWD@", str(env.project)))
    return target


def request_differences(pi: PiInstall, env: Env) -> set[str]:
    from tests.llm.fake_server import FakeProviderServer

    with FakeProviderServer() as server:
        agent_dir = env.root / f"pi-agent-{pi.version}"
        write_pi_models(agent_dir, server.base_url)
        server.queue_text("from the fake model")
        pi_env = dict(
            env.vars, PI_CODING_AGENT_DIR=str(agent_dir), PATH=f"{pi.node.parent}:{os.environ['PATH']}"
        )
        done = subprocess.run(
            [str(pi.node), str(pi.cli), "--session", str(_session_copy(env, "pi.jsonl")), *PROMPT_ARGS],
            cwd=env.project,
            env=pi_env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0 and done.stdout.strip() == "from the fake model", done.stderr[-3000:]
        assert len(server.requests) == 1
        pi_body = server.requests[0].body

        env.settings(CORRAL_LOCAL_SETTINGS.format(base_url=server.base_url))
        server.queue_text("from the fake model")
        done = subprocess.run(
            [CORRAL, "run", "--session", str(_session_copy(env, "corral.jsonl")), *CORRAL_ARGS, *PROMPT_ARGS],
            cwd=env.project,
            env=dict(env.vars, LOCAL_KEY="k"),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0 and done.stdout.strip() == "from the fake model", done.stderr[-3000:]
        assert len(server.requests) == 2
        corral_body = server.requests[1].body
    out: set[str] = set()
    _diff("", _comparable(pi_body, env.project), _comparable(corral_body, env.project), out)
    return out


def test_corral_sends_what_pi_sends_for_the_same_session(pi: PiInstall, cli_env: Env) -> None:
    differences = request_differences(pi, cli_env)
    expected = KNOWN_DIFFERENCES[pi.version]
    assert differences == expected, (
        f"new differences: {sorted(differences - expected)}; fixed (drop from KNOWN_DIFFERENCES): "
        f"{sorted(expected - differences)}"
    )


def test_pis_rpc_client_drives_corral(pi: PiInstall, cli_env: Env) -> None:
    cli_env.script("hello", "steps:\n  - text: hello from corral\non_exhausted: repeat_last\n")
    cli_env.script("other", "steps:\n  - text: other model\non_exhausted: repeat_last\n")
    exit_file = cli_env.root / "corral-exit.json"
    env = dict(
        cli_env.vars,
        CORRAL_BIN=CORRAL,
        CORRAL_EXIT_FILE=str(exit_file),
        PATH=f"{pi.node.parent}:{os.environ['PATH']}",
    )
    shim_args = [str(cli_env.project), pi.version.split(".")[0]]
    done = subprocess.run(
        [
            str(pi.node),
            str(SHIM / "drive.mjs"),
            str(pi.rpc_client),
            str(SHIM / "corral-as-node.mjs"),
            *shim_args,
        ],
        cwd=cli_env.project,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.splitlines()[-1])
    assert "error" not in out, out.get("error")

    assert (
        out["stateBefore"]["model"]["provider"] == "scripted" and out["stateBefore"]["model"]["id"] == "hello"
    )
    assert out["lastText"] == "hello from corral"
    assert out["messages"] == ["user", "assistant"]
    assert "scripted/other" in out["models"]
    assert (out["setModel"]["provider"], out["setModel"]["id"]) == ("scripted", "other")
    assert out["cycleThinking"] == {"level": "medium"}
    assert out["bash"] == {"output": "from-bash\n", "exitCode": 0, "cancelled": False, "truncated": False}
    assert out["stats"]["userMessages"] == 1 and out["stats"]["assistantMessages"] == 1
    assert [m["text"] for m in out["forkMessages"]] == ["hi there"]
    assert out["commands"] == []
    after = out["stateAfter"]
    assert after["sessionName"] == "driven by pi" and after["thinkingLevel"] == "medium"
    assert (after["steeringMode"], after["followUpMode"], after["autoCompactionEnabled"]) == (
        "all",
        "all",
        False,
    )
    assert "not supported" in out["exportHtml"]
    assert out["fork"] == {"text": "hi there", "cancelled": False}
    assert out["clone"] == {"cancelled": False}
    assert out["newSession"] == {"cancelled": False}
    assert out["stateNew"]["messageCount"] == 0 and out["stateNew"]["sessionId"] != after["sessionId"]
    assert {"agent_start", "message_update", "agent_end", "agent_settled"} <= set(out["events"])
    if pi.version.startswith("1."):
        assert out["promptResult"] == "started"
        assert out["steer"] == "queued"
        assert out["clearQueue"] == {"steering": ["queued steer"], "followUp": []}
        assert out["thinkingLevels"] == ["off", "minimal", "low", "medium", "high"]
        assert out["entryTypes"][:2] == ["model_change", "thinking_level_change"]  # the new session's
        assert out["treeRoots"] == 1 and out["treeLeafIsLast"] is True
    # RpcClient.stop() sends SIGTERM and waits 1 s: corral ended in time, with Pi's code.
    assert json.loads(exit_file.read_text()) == {"code": 143, "signal": None}
