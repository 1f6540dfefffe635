"""`corral run --mode rpc` end to end: hostile lines, Pi's commands and shapes, signals, Pi's CLI flags."""

from __future__ import annotations

import base64
import json
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e._rpc_client import RpcProcess
from tests.e2e.conftest import Env, RunCorral

HELLO = "steps:\n  - text: hello there\n    usage: {input: 100, output: 5}\non_exhausted: repeat_last\n"
SLOW = "steps:\n  - text: never\n    delay_ms: 60000\n"


@pytest.fixture
def rpc(cli_env: Env) -> Iterator[RpcProcess]:
    cli_env.script("hello", HELLO)
    cli_env.script("other", "steps:\n  - text: other model\non_exhausted: repeat_last\n")
    process = RpcProcess(cli_env, "--model", "scripted/hello")
    try:
        yield process
    finally:
        process.kill()


def _parse_errors(rpc: RpcProcess, payloads: list[bytes]) -> list[dict]:
    out = []
    for payload in payloads:
        rpc.send_raw(payload + b"\n")
        out.append(rpc.read_until(lambda o: o.get("type") == "response"))
    return out


# --- item 9: hostile input --------------------------------------------------------------------------


def test_unparsable_lines_get_parse_errors_and_the_process_keeps_serving(rpc: RpcProcess) -> None:
    payloads = [
        b"[" * 100_000,
        b'{"type": "get_state", "id": ' + b"7" * 5000 + b"}",
        b'{"type": "get_state", "id": "x", "n": ' + b"1" * 5000 + b"}",
        b"\xff\xfe\x00binary\x80",
        b'{"type": "get_state", "message": "caf\xe9"}',
        b'{"type": "get_state", "id": NaN}',
        b"{" * 50_000 + b"}" * 50_000,
        b"not json at all",
    ]
    responses = _parse_errors(rpc, payloads)
    for response in responses:
        assert response["success"] is False and response["command"] == "parse", response
        assert "id" not in response
        assert response["error"].startswith("Failed to parse command:")
    assert "nested too deeply" in responses[0]["error"]
    assert "UTF-8" in responses[3]["error"]
    assert "NaN" in responses[5]["error"]
    state = rpc.ok({"type": "get_state"})
    assert state["isStreaming"] is False
    rpc.prompt_and_settle("still alive?")
    assert rpc.ok({"type": "get_last_assistant_text"}) == {"text": "hello there"}
    assert rpc.close() == 0


@pytest.mark.parametrize(
    "id_text",
    [b"Infinity", b"-Infinity", b"1e400", b"-1e999", b"true", b"[1]", b'{"a": 1}'],
)
def test_an_id_that_is_not_a_finite_string_or_number_is_refused_never_echoed(
    rpc: RpcProcess, id_text: bytes
) -> None:
    rpc.send_raw(b'{"type": "get_state", "id": ' + id_text + b"}\n")
    response = rpc.read_until(lambda o: o.get("type") == "response")
    assert response["success"] is False
    assert "id" not in response
    assert ("finite" in response["error"]) or ("not JSON" in response["error"])
    assert rpc.ok({"type": "get_state"})["sessionId"]


def test_ids_are_echoed_as_given_and_lone_surrogates_never_break_the_output(rpc: RpcProcess) -> None:
    big = int("9" * 4000)
    rpc.send_raw(b'{"type": "get_state", "id": ' + str(big).encode() + b"}\n")
    assert rpc.read_until(lambda o: o.get("type") == "response")["id"] == big
    rpc.send_raw(b'{"type": "get_state", "id": 12.5}\n')
    assert rpc.read_until(lambda o: o.get("type") == "response")["id"] == 12.5
    # A lone surrogate (valid JSON escape, invalid Unicode) is replaced, not echoed as broken UTF-8.
    rpc.send_raw(b'{"type": "get_state", "id": "a\\ud800b"}\n')
    response = rpc.read_until(lambda o: o.get("type") == "response")
    assert response["success"] is True and response["id"] == "a\ufffdb"
    rpc.send_raw(b'{"type": "prompt", "message": "x\\udfff", "id": "p"}\n')
    rpc.read_until(lambda o: o.get("type") == "agent_settled")
    messages = rpc.ok({"type": "get_messages"})["messages"]
    assert messages[0]["content"] in ("x\ufffd", [{"type": "text", "text": "x\ufffd"}])


def test_a_line_with_crlf_and_unicode_separators_is_one_command(rpc: RpcProcess) -> None:
    rpc.send_raw('{"type": "set_session_name", "name": "a\u2028b", "id": "n"}\r\n'.encode())
    response = rpc.read_until(lambda o: o.get("type") == "response")
    assert response == {"type": "response", "command": "set_session_name", "success": True, "id": "n"}
    assert rpc.ok({"type": "get_state"})["sessionName"] == "a\u2028b"


# --- item 10: Pi's commands ------------------------------------------------------------------------


def test_unknown_and_unsupported_commands_fail_with_a_reason(rpc: RpcProcess) -> None:
    unknown = rpc.request({"type": "teleport"})
    assert unknown["success"] is False and unknown["error"] == "Unknown command: teleport"
    export = rpc.request({"type": "export_html"})
    assert export["success"] is False and "not supported" in export["error"]
    assert rpc.ok({"type": "get_commands"}) == {"commands": []}


def test_get_state_model_has_pis_model_shape(rpc: RpcProcess) -> None:
    model = rpc.ok({"type": "get_state"})["model"]
    assert set(model) == {
        "id",
        "name",
        "api",
        "provider",
        "baseUrl",
        "reasoning",
        "input",
        "cost",
        "contextWindow",
        "maxTokens",
    }
    assert (model["provider"], model["id"], model["input"]) == ("scripted", "hello", ["text"])
    assert set(model["cost"]) == {"input", "output", "cacheRead", "cacheWrite"}


def test_models_set_cycle_and_list(rpc: RpcProcess) -> None:
    models = rpc.ok({"type": "get_available_models"})["models"]
    refs = [f"{m['provider']}/{m['id']}" for m in models]
    assert "scripted/hello" in refs and "scripted/other" in refs
    missing = rpc.request({"type": "set_model", "provider": "scripted", "modelId": "nope"})
    assert missing["success"] is False and "Model not found: scripted/nope" in missing["error"]
    chosen = rpc.ok({"type": "set_model", "provider": "scripted", "modelId": "other"})
    assert (chosen["provider"], chosen["id"]) == ("scripted", "other")
    rpc.prompt_and_settle("which model?")
    assert rpc.ok({"type": "get_last_assistant_text"})["text"] == "other model"
    cycled = rpc.ok({"type": "cycle_model"})
    assert set(cycled) == {"model", "thinkingLevel", "isScoped"} and cycled["isScoped"] is False
    index = refs.index("scripted/other")
    next_model = cycled["model"]
    assert f"{next_model['provider']}/{next_model['id']}" == refs[(index + 1) % len(refs)]
    assert rpc.ok({"type": "get_state"})["model"]["id"] == next_model["id"]


def test_thinking_levels(rpc: RpcProcess) -> None:
    assert rpc.ok({"type": "get_available_thinking_levels"}) == {
        "levels": ["off", "minimal", "low", "medium", "high"]
    }
    assert rpc.ok({"type": "set_thinking_level", "level": "low"}) is None
    assert rpc.ok({"type": "get_state"})["thinkingLevel"] == "low"
    assert rpc.ok({"type": "cycle_thinking_level"}) == {"level": "medium"}
    rpc.ok({"type": "set_thinking_level", "level": "xhigh"})  # clamped to what the model has
    assert rpc.ok({"type": "get_state"})["thinkingLevel"] == "high"
    assert rpc.ok({"type": "cycle_thinking_level"}) == {"level": "off"}
    rpc.ok({"type": "set_thinking_level", "level": "max"})  # Pi 1.x: the highest level the model has
    assert rpc.ok({"type": "get_state"})["thinkingLevel"] == "high"
    bad = rpc.request({"type": "set_thinking_level", "level": "max!"})
    assert bad["success"] is False and "level" in bad["error"]


def test_queue_modes_auto_compaction_and_clear_queue(rpc: RpcProcess) -> None:
    rpc.ok({"type": "set_steering_mode", "mode": "all"})
    rpc.ok({"type": "set_follow_up_mode", "mode": "all"})
    rpc.ok({"type": "set_auto_compaction", "enabled": False})
    state = rpc.ok({"type": "get_state"})
    assert (state["steeringMode"], state["followUpMode"], state["autoCompactionEnabled"]) == (
        "all",
        "all",
        False,
    )
    bad = rpc.request({"type": "set_steering_mode", "mode": "sometimes"})
    assert bad["success"] is False and '"mode"' in bad["error"]
    bad = rpc.request({"type": "set_auto_retry", "enabled": "yes"})
    assert bad["success"] is False and '"enabled"' in bad["error"]
    assert rpc.ok({"type": "steer", "message": "later"}) == {"disposition": "queued"}
    assert rpc.ok({"type": "follow_up", "message": "after"}) == {"disposition": "queued"}
    assert rpc.ok({"type": "clear_queue"}) == {"steering": ["later"], "followUp": ["after"]}


def test_auto_retry_off_and_abort_retry(cli_env: Env) -> None:
    cli_env.settings("[retry]\nbase_delay_ms = 60000\n")
    cli_env.script(
        "flaky",
        "steps:\n  - text: overloaded\n    stop: error\n    error_retryable: true\n"
        "  - text: overloaded\n    stop: error\n    error_retryable: true\n  - text: fine\n",
    )
    rpc = RpcProcess(cli_env, "--model", "scripted/flaky")
    try:
        rpc.ok({"type": "prompt", "message": "go"})
        start = rpc.read_until(lambda o: o.get("type") == "auto_retry_start")
        assert start["attempt"] == 1
        rpc.ok({"type": "abort_retry"})  # the 60 s wait ends now
        end = rpc.read_until(lambda o: o.get("type") == "auto_retry_end")
        assert end["success"] is False
        rpc.read_until(lambda o: o.get("type") == "agent_settled")
        rpc.ok({"type": "set_auto_retry", "enabled": False})
        rpc.ok({"type": "prompt", "message": "again"})
        rpc.read_until(lambda o: o.get("type") == "agent_settled")
        kinds = [o.get("type") for o in rpc.seen]
        assert kinds.count("auto_retry_start") == 1  # the second error was not retried
        assert rpc.close() == 0
    finally:
        rpc.kill()


def test_bash_runs_for_the_user_and_reaches_the_context(rpc: RpcProcess) -> None:
    result = rpc.ok({"type": "bash", "command": "echo out; echo err >&2; exit 3"})
    assert result == {"output": "out\nerr\n", "exitCode": 3, "cancelled": False, "truncated": False}
    hidden = rpc.ok({"type": "bash", "command": "echo secret", "excludeFromContext": True})
    assert hidden["output"] == "secret\n" and hidden["exitCode"] == 0
    messages = rpc.ok({"type": "get_messages"})["messages"]
    bash = [m for m in messages if m["role"] == "bashExecution"]
    assert [m["command"] for m in bash] == ["echo out; echo err >&2; exit 3", "echo secret"]
    assert bash[0]["exitCode"] == 3 and bash[1]["excludeFromContext"] is True
    rpc.send({"type": "bash", "command": "echo started; sleep 60", "id": "b"})
    rpc.send({"type": "abort_bash", "id": "a"})
    aborted = rpc.read_until(lambda o: o.get("type") == "response" and o.get("id") == "b")
    assert aborted["data"]["cancelled"] is True and "exitCode" not in aborted["data"]
    empty = rpc.request({"type": "bash", "command": ""})
    assert empty["success"] is False and '"command"' in empty["error"]


def test_sessions_new_switch_fork_clone_and_names(rpc: RpcProcess, cli_env: Env) -> None:
    rpc.prompt_and_settle("first question")
    rpc.prompt_and_settle("second question")
    first = rpc.ok({"type": "get_state"})
    forks = rpc.ok({"type": "get_fork_messages"})["messages"]
    assert [m["text"] for m in forks] == ["first question", "second question"]
    assert rpc.ok({"type": "set_session_name", "name": "  named  "}) is None
    assert rpc.read_until(lambda o: o.get("type") == "session_info_changed")["name"] == "named"
    empty = rpc.request({"type": "set_session_name", "name": "   "})
    assert empty["success"] is False and empty["error"] == "Session name cannot be empty"

    assert rpc.ok({"type": "fork", "entryId": forks[1]["entryId"]}) == {
        "text": "second question",
        "cancelled": False,
    }
    forked = rpc.ok({"type": "get_state"})
    assert forked["sessionId"] != first["sessionId"] and forked["messageCount"] == 2
    bad = rpc.request({"type": "fork", "entryId": "nope"})
    assert bad["success"] is False

    assert rpc.ok({"type": "clone"}) == {"cancelled": False}
    cloned = rpc.ok({"type": "get_state"})
    assert (
        cloned["sessionId"] not in (first["sessionId"], forked["sessionId"]) and cloned["messageCount"] == 2
    )

    assert rpc.ok({"type": "new_session", "parentSession": first["sessionFile"]}) == {"cancelled": False}
    fresh = rpc.ok({"type": "get_state"})
    assert fresh["messageCount"] == 0 and fresh["sessionId"] != cloned["sessionId"]
    assert fresh["model"]["id"] == "hello"
    rpc.prompt_and_settle("in the new session")
    header = json.loads(Path(fresh["sessionFile"]).read_text().splitlines()[0])
    assert header["parentSession"] == first["sessionFile"]

    assert rpc.ok({"type": "switch_session", "sessionPath": first["sessionFile"]}) == {"cancelled": False}
    back = rpc.ok({"type": "get_state"})
    assert back["sessionId"] == first["sessionId"] and back["messageCount"] == 4
    assert back["sessionName"] == "named"
    missing = rpc.request({"type": "switch_session", "sessionPath": str(cli_env.root / "none.jsonl")})
    assert missing["success"] is False and "does not exist" in missing["error"]
    assert rpc.ok({"type": "get_state"})["sessionId"] == first["sessionId"]  # nothing changed
    assert rpc.close() == 0


def test_switching_sessions_while_busy_is_refused(cli_env: Env) -> None:
    cli_env.script("slow", SLOW)
    rpc = RpcProcess(cli_env, "--model", "scripted/slow")
    try:
        rpc.ok({"type": "prompt", "message": "go"})
        rpc.read_until(lambda o: o.get("type") == "message_start")
        busy = rpc.request({"type": "new_session"})
        assert busy["success"] is False and "busy" in busy["error"]
        rpc.ok({"type": "abort"})
    finally:
        rpc.kill()


def test_images_are_refused_for_text_only_models_and_sent_to_image_models(cli_env: Env) -> None:
    from tests.llm.fake_server import FakeProviderServer

    png = base64.b64encode(b"\x89PNG\r\n\x1a\nfake").decode()
    image = {"type": "image", "data": png, "mimeType": "image/png"}
    cli_env.script("hello", HELLO)
    with FakeProviderServer() as server:
        server.queue_text("I see a picture")
        cli_env.settings(
            f'[providers.local]\nbase_url = "{server.base_url}"\napi = "openai-chat"\n\n'
            '[[providers.local.models]]\nid = "eyes"\ninput = ["text", "image"]\n'
        )
        rpc = RpcProcess(cli_env, "--model", "scripted/hello")
        try:
            refused = rpc.request({"type": "prompt", "message": "look", "images": [image]})
            assert refused["success"] is False
            assert "scripted/hello does not accept images" in refused["error"]
            malformed = rpc.request({"type": "prompt", "message": "look", "images": [{"data": 1}]})
            assert malformed["success"] is False and "images[0]" in malformed["error"]
            assert rpc.ok({"type": "get_state"})["messageCount"] == 0  # nothing was sent or stored
            chosen = rpc.ok({"type": "set_model", "provider": "local", "modelId": "eyes"})
            assert (chosen["api"], chosen["baseUrl"], chosen["input"]) == (
                "openai-completions",
                server.base_url,
                ["text", "image"],
            )
            rpc.ok({"type": "prompt", "message": "look", "images": [image]})
            rpc.read_until(lambda o: o.get("type") == "agent_settled")
            assert rpc.ok({"type": "get_last_assistant_text"})["text"] == "I see a picture"
        finally:
            rpc.kill()
        body = json.dumps(server.requests[-1].body)
        assert f"data:image/png;base64,{png}" in body


# --- item 11: signals and flags ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130), (signal.SIGHUP, 129)]
)
def test_a_signal_ends_an_idle_rpc_process_with_pis_exit_code(
    cli_env: Env, signum: signal.Signals, code: int
) -> None:
    cli_env.script("hello", HELLO)
    rpc = RpcProcess(cli_env, "--model", "scripted/hello")
    try:
        rpc.ok({"type": "get_state"})
        rpc.proc.send_signal(signum)
        assert rpc.proc.wait(timeout=30) == code
        assert "Traceback" not in rpc.stderr() and "Fatal Python error" not in rpc.stderr()
    finally:
        rpc.kill()


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_ends_a_busy_rpc_process_and_keeps_the_partial_reply(
    cli_env: Env, signum: signal.Signals, code: int
) -> None:
    cli_env.script("slow", SLOW)
    rpc = RpcProcess(cli_env, "--model", "scripted/slow")
    try:
        rpc.ok({"type": "bash", "command": "true"})  # the session has content before the run
        rpc.ok({"type": "prompt", "message": "go"})
        rpc.read_until(lambda o: o.get("type") == "message_start" and o["message"]["role"] == "assistant")
        session_file = rpc.ok({"type": "get_state"})["sessionFile"]
        rpc.proc.send_signal(signum)
        assert rpc.proc.wait(timeout=30) == code
        assert "Traceback" not in rpc.stderr() and "Fatal Python error" not in rpc.stderr()
    finally:
        rpc.kill()
    entries = [json.loads(line) for line in Path(session_file).read_text().splitlines()]
    assistant = [
        e["message"] for e in entries if e.get("type") == "message" and e["message"]["role"] == "assistant"
    ]
    assert assistant and assistant[-1]["stopReason"] == "aborted"


def test_pis_provider_and_model_flags_are_accepted(corral: RunCorral, cli_env: Env) -> None:
    cli_env.script("hello", HELLO)
    done = corral(
        "run", "--mode", "rpc", "--provider", "scripted", "--model", "hello", input='{"type": "get_state"}\n'
    )
    assert done.returncode == 0, done.stderr
    state = json.loads(done.stdout.splitlines()[0])["data"]
    assert (state["model"]["provider"], state["model"]["id"]) == ("scripted", "hello")
    same = corral("run", "--mode", "rpc", "--provider", "scripted", "--model", "scripted/hello", input="")
    assert same.returncode == 0, same.stderr
    alone = corral("run", "--mode", "rpc", "--provider", "scripted", input="")
    assert alone.returncode == 2 and "--provider scripted needs --model" in alone.stderr


def test_message_update_carries_pi_073_and_1x_fields(cli_env: Env) -> None:
    cli_env.script(
        "tool",
        "steps:\n  - text: listing\n    tool_calls:\n      - {name: ls, args: {}, id: call-ls}\n"
        "    usage: {input: 10, output: 3}\n  - text: done\n",
    )
    rpc = RpcProcess(cli_env, "--model", "scripted/tool")
    try:
        rpc.prompt_and_settle("go")
        updates = [o for o in rpc.seen if o.get("type") == "message_update"]
        assert updates and all("message" in u and "usage" in u for u in updates)
        starts = [
            u["assistantMessageEvent"]
            for u in updates
            if u["assistantMessageEvent"]["type"] == "toolcall_start"
        ]
        assert [(s["id"], s["toolName"]) for s in starts] == [("call-ls", "ls")]
    finally:
        rpc.kill()


HOSTILE = [
    b"[" * 100_000,
    b'{"type": "get_state", "id": ' + b"7" * 5000 + b"}",
    b"\xff\xfe\x80",
    b'{"id": 1e400}',
]


def test_hostile_lines_leave_a_running_in_process_agent_alone(cli_env: Env) -> None:
    """The process (the host of the lead's managed agents) survives the lines that used to kill it,
    and an agent that was working meanwhile still delivers its result to the lead."""
    cli_env.script(
        "lead",
        "steps:\n"
        "  - text: Delegating.\n"
        "    tool_calls:\n"
        "      - {name: agent, args: {action: delegate, definition: generalist, label: helper, task: Wait.}}\n"
        "  - text: Waiting for the helper.\n"
        "  - text: 'Helper said: {{ last_custom.status }}'\n"
        "agents:\n"
        "  helper:\n"
        "    - text: waiting\n"
        "      tool_calls:\n"
        "        - {name: bash, args: {command: 'while [ ! -f go ]; do sleep 0.05; done; echo went'}}\n"
        "    - text: helper done\n",
    )
    rpc = RpcProcess(cli_env, "--model", "scripted/lead", "--surfaces", "agent")
    try:
        rpc.prompt_and_settle("start")
        assert rpc.ok({"type": "get_last_assistant_text"})["text"] == "Waiting for the helper."
        for payload in HOSTILE:
            rpc.send_raw(payload + b"\n")
            response = rpc.read_until(lambda o: o.get("type") == "response")
            assert response["success"] is False and response["command"] == "parse"
        (cli_env.project / "go").touch()  # the helper, still working, may finish now
        rpc.read_until(lambda o: o.get("type") == "agent_settled")
        assert rpc.ok({"type": "get_last_assistant_text"})["text"] == "Helper said: completed"
        messages = rpc.ok({"type": "get_messages"})["messages"]
        assert any(m["role"] == "custom" and "helper done" in json.dumps(m) for m in messages)
        assert rpc.close() == 0
    finally:
        rpc.kill()


def test_a_closed_stdin_is_a_one_line_error(cli_env: Env) -> None:
    import os
    import subprocess

    from tests.e2e.conftest import CORRAL

    cli_env.script("hello", HELLO)
    done = subprocess.run(
        [CORRAL, "run", "--mode", "rpc", "--model", "scripted/hello"],
        cwd=cli_env.project,
        env=cli_env.vars,
        preexec_fn=lambda: os.close(0),  # the child starts without a standard input
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "corral: error: --mode rpc reads commands on stdin, which is closed: connect a pipe or a terminal"
    )


def test_pis_system_prompt_flags(corral: RunCorral, cli_env: Env) -> None:
    """`--system-prompt` replaces the prompt and `--append-system-prompt` (text or a file, repeatable) is
    appended, as in Pi."""
    from tests.llm.fake_server import FakeProviderServer

    (cli_env.root / "extra.md").write_text("Always answer in French.")
    args = ("--system-prompt", "You are terse.", "--append-system-prompt", str(cli_env.root / "extra.md"))
    args += ("--append-system-prompt", "Second.")
    with FakeProviderServer() as server:
        server.queue_text("ok")
        cli_env.settings(
            f'[providers.local]\nbase_url = "{server.base_url}"\napi = "openai-chat"\n\n'
            '[[providers.local.models]]\nid = "tiny"\n'
        )
        done = corral("run", "--model", "local/tiny", "--surfaces", "", *args, "-p", "hi")
        assert done.returncode == 0, done.stderr
        system = server.requests[-1].body["messages"][0]
    assert system["role"] == "system"
    assert system["content"].startswith("You are terse.")
    assert "Always answer in French.\n\nSecond." in system["content"]
    assert "expert coding assistant" not in system["content"]  # the base prompt was replaced
    folder = cli_env.root / "a-directory"
    folder.mkdir()
    bad = corral("run", "--model", "local/tiny", "--append-system-prompt", str(folder), "-p", "hi")
    assert bad.returncode == 2 and "cannot read it as a UTF-8 file" in bad.stderr


def test_get_tree_has_pis_shape(rpc: RpcProcess) -> None:
    rpc.prompt_and_settle("one")
    rpc.prompt_and_settle("two")
    data = rpc.ok({"type": "get_tree"})
    entries = rpc.ok({"type": "get_entries"})["entries"]
    assert data["leafId"] == entries[-1]["id"]
    chain, nodes = [], data["tree"]
    while nodes:
        assert len(nodes) == 1 and set(nodes[0]) == {"entry", "children"}
        chain.append(nodes[0]["entry"])
        nodes = nodes[0]["children"]
    assert chain == entries  # one linear branch, in file order
    since = rpc.ok({"type": "get_entries", "since": entries[-2]["id"]})
    assert since == {"entries": [entries[-1]], "leafId": entries[-1]["id"]}


def test_tree_json_nests_deeper_than_json_dumps_can(tmp_path: Path) -> None:
    import sys

    from corral._cli._rpc import tree_json
    from corral.llm import UserMessage
    from corral.session import SessionManager

    session = SessionManager.create(tmp_path, persist=False)
    for n in range(3000):
        session.append_message(UserMessage(content=f"m{n}\ud800"))
    text = tree_json(session.get_tree())
    text.encode("utf-8")  # ASCII-escaped: even a lone surrogate stays valid
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(20_000)
    try:
        tree = json.loads(text)
    finally:
        sys.setrecursionlimit(limit)
    depth = 0
    while tree:
        assert tree[0]["entry"]["message"]["content"] == f"m{depth}\ud800"
        tree = tree[0]["children"]
        depth += 1
    assert depth == 3000


def test_bash_while_the_agent_works_joins_the_context_after_the_run(cli_env: Env) -> None:
    cli_env.script("slow", SLOW)
    rpc = RpcProcess(cli_env, "--model", "scripted/slow")
    try:
        rpc.ok({"type": "prompt", "message": "go"})
        rpc.read_until(lambda o: o.get("type") == "message_start" and o["message"]["role"] == "assistant")
        assert rpc.ok({"type": "bash", "command": "echo during"})["output"] == "during\n"
        roles = [m["role"] for m in rpc.ok({"type": "get_messages"})["messages"]]
        assert roles == ["user"]  # held: a tool call and its result are never split
        rpc.ok({"type": "abort"})
        roles = [m["role"] for m in rpc.ok({"type": "get_messages"})["messages"]]
        assert roles == ["user", "assistant", "bashExecution"]
    finally:
        rpc.kill()
