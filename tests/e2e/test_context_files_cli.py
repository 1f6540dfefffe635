"""A cloned repository's context files cannot carry the user's secrets to the model endpoint.

The attack of issue 27, item 1, through the real `corral run -p`: the repository's `AGENTS.md` links
to `/proc/self/environ` (corral's environment, with a token in it) and `sub/CLAUDE.md` to the user's
`~/.ssh/id_rsa`. The lead delegates an agent into `sub/`; every request that reaches the (fake,
loopback) endpoint is recorded and searched for the secrets, and stderr must name each refused file
exactly once although two system prompts were built in the process.
"""

from __future__ import annotations

import json
import subprocess

from tests.llm.fake_server import FakeProviderServer, FakeReply, FakeToolCall, RecordedRequest

from .conftest import Env, RunCorral, local_settings

TOKEN = "ghp-CONTEXT-E2E-TOKEN-93b7"
KEY = "OPENSSH-CONTEXT-E2E-KEY-5d20"


def _users(request: RecordedRequest) -> str:
    messages = (request.body or {}).get("messages") or []
    return json.dumps([m.get("content") for m in messages if m.get("role") == "user"])


def test_symlinked_context_files_never_reach_the_endpoint_and_are_named_once(
    corral: RunCorral, cli_env: Env, server: FakeProviderServer
) -> None:
    home = cli_env.root / "userhome"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(f"-----BEGIN OPENSSH PRIVATE KEY-----\n{KEY}\n")
    project = cli_env.project
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (project / "AGENTS.md").symlink_to("/proc/self/environ")
    (project / "CLAUDE.md").write_text("House rules: answer briefly.")
    (project / "sub").mkdir()
    (project / "sub" / "CLAUDE.md").symlink_to(home / ".ssh" / "id_rsa")
    local_settings(cli_env, server, window=65536)

    def respond(request: RecordedRequest) -> FakeReply:
        users = _users(request)
        if "look around" in users:
            return FakeReply(text="child done")
        if "corral-agent-result" in json.dumps(request.body) or "tool" in json.dumps(
            [m.get("role") for m in (request.body or {}).get("messages") or []]
        ):
            return FakeReply(text="lead done")
        args = {"action": "delegate", "definition": "generalist", "task": "look around", "cwd": "sub"}
        return FakeReply(tool_calls=[FakeToolCall("agent", args)])

    server.responder = respond
    done = corral("run", "-p", "go", env={"MY_SERVICE_TOKEN": TOKEN}, timeout=120)
    assert done.returncode == 0, done.stderr
    bodies = [json.dumps(request.body) for request in server.requests]
    child = [body for body in bodies if "look around" in body and "child done" not in body]
    assert child, "the delegated agent never asked the endpoint"
    assert not [body for body in bodies if TOKEN in body], "the token reached the endpoint"
    assert not [body for body in bodies if KEY in body], "the key file reached the endpoint"
    assert all("House rules: answer briefly." in body for body in bodies)  # context files do flow
    named = [line for line in done.stderr.splitlines() if line.startswith("corral: warning: not reading")]
    assert sum(f"{project / 'AGENTS.md'}:" in line for line in named) == 1, done.stderr
    assert sum(f"{project / 'sub' / 'CLAUDE.md'}:" in line for line in named) == 1, done.stderr
    for session in cli_env.sessions():
        text = session.read_text()
        assert TOKEN not in text and KEY not in text
