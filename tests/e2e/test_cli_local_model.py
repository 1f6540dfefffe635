"""`corral run -p` against an OpenAI-compatible server on 127.0.0.1 (the fake one) with small windows.

What a local-model user meets: an overflow that compaction cannot fix, an empty reply, a reply
cut at the cap, corral's own tools not fitting the window — each reported as such, never exit 0
with nothing.
"""

from __future__ import annotations

import json
import re

from tests.llm.fake_server import FakeProviderServer, FakeReply

from .conftest import Env, RunCorral, local_settings


def test_unrecoverable_overflow_exits_1_saying_it_does_not_fit(
    corral: RunCorral, cli_env: Env, server: FakeProviderServer
) -> None:
    local_settings(cli_env, server, window=8192)
    server.queue_error(400, "This model's maximum context length is 8192 tokens, you requested 9000 tokens")
    done = corral("run", "--surfaces", "", "-p", "hi")
    assert done.returncode == 1
    assert done.stdout == ""
    assert "no longer fits the 8,192-token context window of local/small" in done.stderr
    assert "maximum context length is 8192 tokens" in done.stderr


def test_overflow_after_an_answer_does_not_print_the_previous_answer(
    corral: RunCorral, cli_env: Env, server: FakeProviderServer
) -> None:
    local_settings(cli_env, server, window=8192)
    server.queue_text("the first answer")
    assert corral("run", "--surfaces", "", "-p", "one").returncode == 0
    server.queue_error(400, "the request exceeds the available context size, try increasing it")
    done = corral("run", "--surfaces", "", "-c", "-p", "two")
    assert done.returncode == 1
    assert "the first answer" not in done.stdout
    assert "exceeds the available context size" in done.stderr


def test_an_empty_reply_exits_1(corral: RunCorral, cli_env: Env, server: FakeProviderServer) -> None:
    local_settings(cli_env, server, window=8192)
    server.queue_text("")
    done = corral("run", "--surfaces", "", "-p", "hi")
    assert done.returncode == 1
    assert done.stdout == ""
    assert "empty reply" in done.stderr


def test_a_reply_cut_at_the_cap_prints_it_with_a_one_line_note(
    corral: RunCorral, cli_env: Env, server: FakeProviderServer
) -> None:
    local_settings(cli_env, server, window=8192)
    server.queue(FakeReply(text="the start of a long", stop="length"))
    done = corral("run", "--surfaces", "", "-p", "hi")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "the start of a long\n"
    [note] = [line for line in done.stderr.splitlines() if "cut at the reply cap" in line]
    assert "256 tokens" in note
    assert server.requests[-1].body["max_tokens"] == 256


def test_teams_surface_on_a_2k_window_fails_clearly_without_a_request(
    corral: RunCorral, cli_env: Env, server: FakeProviderServer
) -> None:
    local_settings(cli_env, server, window=2048)
    done = corral("run", "--surfaces", "teams", "-p", "hi")
    assert done.returncode == 1
    assert "more than the 2,048-token context window of local/small" in done.stderr
    assert "--surfaces" in done.stderr
    assert server.requests == []


def test_tools_taking_most_of_the_window_warn_once(
    corral: RunCorral, cli_env: Env, server: FakeProviderServer
) -> None:
    local_settings(cli_env, server, window=4096)
    server.queue_text("ok")
    done = corral("run", "-p", "hi")
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if "of the 4,096-token context window" in line]
    assert len(warnings) == 1 and warnings[0].startswith("corral: warning: ")


def _doctor_endpoint(corral: RunCorral) -> list[dict[str, str]]:
    done = corral("doctor", "--json")
    return [c for c in json.loads(done.stdout)["checks"] if c["name"] == "endpoint"]


def test_doctor_checks_the_endpoint_without_a_prompt(
    corral: RunCorral, cli_env: Env, server: FakeProviderServer
) -> None:
    server.models = ["small", "other"]
    local_settings(cli_env, server, window=8192)
    checks = _doctor_endpoint(corral)
    assert [c["status"] for c in checks] == ["ok", "ok"], checks
    assert "lists small, other" in checks[0]["message"]
    assert "speaks openai-chat" in checks[1]["message"]
    # Probes only: never a conversation.
    assert server.requests and all(
        not isinstance((r.body or {}).get("messages"), list) for r in server.requests
    )


def test_doctor_names_a_missing_model_and_a_missing_wire_api(
    corral: RunCorral, cli_env: Env, server: FakeProviderServer
) -> None:
    server.models = ["other"]
    server.wire_apis = {"chat"}
    cli_env.settings(
        f"""
[providers.local]
base_url = "{server.base_url}"
api = "openai-responses"

[[providers.local.models]]
id = "small"
"""
    )
    checks = _doctor_endpoint(corral)
    assert checks[0]["status"] == "warn" and "does not list small" in checks[0]["message"]
    assert checks[1]["status"] == "fail"
    assert f"{server.base_url}/responses does not exist" in checks[1]["message"]
    assert 'set api = "openai-chat" under [providers.local]' in checks[1]["message"]


def test_doctor_fails_a_down_endpoint_naming_it(corral: RunCorral, cli_env: Env) -> None:
    with FakeProviderServer() as gone:
        url = gone.base_url
    cli_env.settings(f'[providers.local]\nbase_url = "{url}"\n\n[[providers.local.models]]\nid = "small"\n')
    done = corral("doctor", "--json")
    assert done.returncode == 1
    [check] = [c for c in json.loads(done.stdout)["checks"] if c["name"] == "endpoint"]
    assert check["status"] == "fail" and f"cannot reach {url}/models" in check["message"]


def test_retries_say_retrying_in_n_s_on_stderr(
    corral: RunCorral, cli_env: Env, server: FakeProviderServer
) -> None:
    cli_env.settings(
        f"""
default_model = "local/small"

[retry]
base_delay_ms = 10

[providers.local]
base_url = "{server.base_url}"

[[providers.local.models]]
id = "small"
"""
    )
    server.queue_error(503, "server overloaded")
    server.queue_text("fine now")
    done = corral("run", "--surfaces", "", "-p", "hi")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "fine now\n"
    [line] = [line for line in done.stderr.splitlines() if "retrying in" in line]
    # 10 ms back-off plus up to 25 % jitter
    assert "server overloaded" in line and re.search(r"retrying in 0\.01\d* s \(attempt 1 of 3\)", line)


def test_a_429_with_retry_after_is_waited_out_in_the_limiter_and_said_on_stderr(
    corral: RunCorral, cli_env: Env, server: FakeProviderServer
) -> None:
    cli_env.settings(
        f"""
default_model = "local/small"

[retry]
base_delay_ms = 10

[providers.local]
base_url = "{server.base_url}"

[[providers.local.models]]
id = "small"
"""
    )
    server.queue(FakeReply(status=429, error_message="slow down", headers={"retry-after": "2"}))
    server.queue_text("fine now")
    done = corral("run", "--surfaces", "", "-p", "hi")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "fine now\n"
    # the agent's own retry came after 10 ms; the shared limiter held it until the window was over
    first, second = server.requests
    assert second.at - first.at >= 2.0
    [line] = [line for line in done.stderr.splitlines() if "rate limit" in line]
    assert re.fullmatch(rf"corral: waiting \(rate limit, [23]s\) at {re.escape(server.base_url)}", line), line
