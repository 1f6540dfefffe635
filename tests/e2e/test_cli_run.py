"""`corral run` end to end with scripted models: print, JSON and RPC modes, sessions and continuation."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from corral.llm import DEFAULT_MODELS, ModelRegistry, listed_prices

from .conftest import CORRAL, Env, RunCorral

TOOL_SCRIPT = """
steps:
  - text: "Writing the file."
    tool_calls:
      - name: write
        args: {path: notes.txt, content: "hello from the agent\\n"}
  - text: "Checking it."
    tool_calls:
      - name: bash
        args: {command: "cat notes.txt"}
  - text: "{{ last_tool_result.exitCode }} - done, the file says hello."
"""


def test_print_mode_prints_the_final_text_and_runs_real_tools(corral: RunCorral, cli_env: Env) -> None:
    cli_env.script("tools", TOOL_SCRIPT)
    done = corral("run", "--model", "scripted/tools", "-p", "write a note")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "0 - done, the file says hello.\n"
    assert (cli_env.project / "notes.txt").read_text() == "hello from the agent\n"


def test_print_mode_provider_error_exits_1_with_the_error(corral: RunCorral, cli_env: Env) -> None:
    cli_env.script("fails", "steps:\n  - text: 'quota exceeded for this key'\n    stop: error\n")
    done = corral("run", "--model", "scripted/fails", "-p", "hi")
    assert done.returncode == 1
    assert "quota exceeded for this key" in done.stderr
    assert done.stdout == ""


def test_session_file_is_written_in_pi_layout(corral: RunCorral, cli_env: Env) -> None:
    cli_env.script("hi", "steps:\n  - text: hello\n")
    assert corral("run", "--model", "scripted/hi", "-p", "hi").returncode == 0
    [path] = cli_env.sessions()
    project = str(cli_env.project.resolve())
    assert path.parent.name == "--" + project.lstrip("/").replace("/", "-") + "--"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[0]["type"] == "session" and lines[0]["version"] == 3 and lines[0]["cwd"] == project
    types = [line["type"] for line in lines[1:]]
    assert types[:2] == ["model_change", "thinking_level_change"]
    roles = [line["message"]["role"] for line in lines if line["type"] == "message"]
    assert roles == ["user", "assistant"]
    assert path.stat().st_mode & 0o777 == 0o600


def test_no_session_writes_nothing(corral: RunCorral, cli_env: Env) -> None:
    cli_env.script("hi", "steps:\n  - text: hello\n")
    assert corral("run", "--no-session", "--model", "scripted/hi", "-p", "hi").returncode == 0
    assert cli_env.sessions() == []


def test_continue_goes_on_where_the_session_stopped(corral: RunCorral, cli_env: Env) -> None:
    cli_env.script(
        "two",
        "steps:\n  - text: first answer\n  - text: second answer\n"
        "    expect: {context_contains: ['first answer', 'question one']}\n",
    )
    first = corral("run", "--model", "scripted/two", "-p", "question one")
    assert first.stdout == "first answer\n"
    second = corral("run", "--continue", "-p", "question two")  # model restored from the session
    assert second.returncode == 0, second.stderr
    assert second.stdout == "second answer\n"
    assert len(cli_env.sessions()) == 1


def test_session_by_id_prefix(corral: RunCorral, cli_env: Env) -> None:
    cli_env.script("two", "steps:\n  - text: one\n  - text: two\n")
    corral("run", "--model", "scripted/two", "-p", "a")
    [path] = cli_env.sessions()
    session_id = json.loads(path.read_text().splitlines()[0])["id"]
    done = corral("run", "--session", session_id[:8], "-p", "b")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "two\n"


def test_json_mode_prints_the_header_then_events(corral: RunCorral, cli_env: Env) -> None:
    cli_env.script("tools", TOOL_SCRIPT)
    done = corral("run", "--mode", "json", "--model", "scripted/tools", "-p", "go")
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert lines[0]["type"] == "session" and lines[0]["version"] == 3
    kinds = [line["type"] for line in lines[1:]]
    assert kinds[0] == "agent_start"
    assert kinds[-2:] == ["agent_settled", "run_end"]
    assert kinds.count("agent_settled") == 1
    assert lines[-1] == {"type": "run_end", "exitCode": 0}
    assert "tool_execution_start" in kinds and "tool_execution_end" in kinds
    ends = [line for line in lines if line["type"] == "tool_execution_end"]
    assert [end["toolName"] for end in ends] == ["write", "bash"]
    assert all(end["isError"] is False for end in ends)


def _rpc(cli_env: Env, commands: list[dict], *, args: tuple[str, ...] = ()) -> list[dict]:
    with subprocess.Popen(
        [CORRAL, "run", "--mode", "rpc", *args],
        cwd=cli_env.project,
        env=cli_env.vars,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        return _drive_rpc(proc, commands)


def _drive_rpc(proc: subprocess.Popen[str], commands: list[dict]) -> list[dict]:
    assert proc.stdin is not None and proc.stdout is not None
    out: list[dict] = []

    def read_until(predicate) -> dict:
        while True:
            line = proc.stdout.readline()
            assert line, f"rpc ended early; stderr: {proc.stderr.read() if proc.stderr else ''}"
            obj = json.loads(line)
            out.append(obj)
            if predicate(obj):
                return obj

    for command in commands:
        proc.stdin.write(json.dumps(command) + "\n")
        proc.stdin.flush()
        if command["type"] == "prompt":
            read_until(lambda o: o.get("type") == "agent_settled")
        else:
            read_until(lambda o, c=command: o.get("type") == "response" and o.get("id") == c.get("id"))
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0
    return out


def test_rpc_prompt_state_messages_and_stats(cli_env: Env) -> None:
    cli_env.script("hi", "steps:\n  - text: hello there\n    usage: {input: 100, output: 5}\n")
    out = _rpc(
        cli_env,
        [
            {"type": "prompt", "message": "hi", "id": "p1"},
            {"type": "get_state", "id": "s1"},
            {"type": "get_messages", "id": "m1"},
            {"type": "get_session_stats", "id": "t1"},
            {"type": "bogus", "id": "b1"},
        ],
        args=("--model", "scripted/hi"),
    )
    responses = {o["id"]: o for o in out if o.get("type") == "response"}
    assert responses["p1"] == {
        "type": "response",
        "command": "prompt",
        "success": True,
        "data": {"disposition": "started"},
        "id": "p1",
    }
    state = responses["s1"]["data"]
    assert state["isStreaming"] is False and state["sessionId"] and state["messageCount"] == 2
    messages = responses["m1"]["data"]["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert messages[1]["content"][0]["text"] == "hello there"
    stats = responses["t1"]["data"]
    assert stats["tokens"]["input"] == 100 and stats["tokens"]["output"] == 5
    assert responses["b1"]["success"] is False and "bogus" in responses["b1"]["error"]


def test_rpc_rejects_malformed_commands_without_dying(cli_env: Env) -> None:
    cli_env.script("hi", "steps:\n  - text: hello\n")
    out = _rpc(
        cli_env,
        [{"type": "steer", "id": "x1"}, {"type": "prompt", "message": "hi", "id": "p1"}],
        args=("--model", "scripted/hi"),
    )
    bad = next(o for o in out if o.get("id") == "x1")
    assert bad["success"] is False and "message" in bad["error"]
    assert any(o.get("type") == "agent_settled" for o in out)


def test_rpc_abort_stops_a_slow_request(cli_env: Env) -> None:
    cli_env.script("slow", "steps:\n  - text: never\n    delay_ms: 60000\n  - text: after abort\n")
    with subprocess.Popen(
        [CORRAL, "run", "--mode", "rpc", "--model", "scripted/slow"],
        cwd=cli_env.project,
        env=cli_env.vars,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as proc:
        _abort_scenario(proc)


def _abort_scenario(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None and proc.stdout is not None

    def send(obj: dict) -> None:
        proc.stdin.write(json.dumps(obj) + "\n")
        proc.stdin.flush()

    def read_until(kind: str, **match: object) -> dict:
        while True:
            line = proc.stdout.readline()
            assert line
            obj = json.loads(line)
            if obj.get("type") == kind and all(obj.get(k) == v for k, v in match.items()):
                return obj

    send({"type": "prompt", "message": "go", "id": "p1"})
    read_until("message_start")  # the user message; the request is now in flight
    read_until("message_start")  # the assistant message has started streaming
    send({"type": "abort", "id": "a1"})
    assert read_until("response", id="a1")["success"] is True
    send({"type": "get_messages", "id": "m1"})
    messages = read_until("response", id="m1")["data"]["messages"]
    assert messages[-1]["role"] == "assistant" and messages[-1]["stopReason"] == "aborted"
    send({"type": "prompt", "message": "again", "id": "p2"})
    read_until("agent_settled")
    send({"type": "get_messages", "id": "m2"})
    messages = read_until("response", id="m2")["data"]["messages"]
    assert messages[-1]["content"][0]["text"] == "after abort"
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0


def test_demo_fixes_the_sample_project(corral: RunCorral, cli_env: Env) -> None:
    # TMPDIR puts the demo's project copy in this test's directory, so `--keep` leaves it here to inspect.
    done = corral("demo", "--keep", env={"TMPDIR": str(cli_env.root)}, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "→ edit invoice.py" in done.stdout
    assert "✗ Command exited with code 1" in done.stdout  # the first test run fails for real
    assert "OK" in done.stdout  # the second run passes for real
    team, rest = done.stdout.split("Act 2")[1].split("Act 3")
    teams, verify = rest.split("Act 4")
    for line in (
        "lead → delegate scout as scout",
        "lead → delegate reviewer as reviewer",
        "lead → steer scout",
        "reviewer asks the lead",
        "lead → reply reviewer",
        "result from reviewer (completed)",
        "result from scout (completed)",
        "2 results delivered to the lead, each exactly once.",
    ):
        assert line in team, team
    assert "✗" not in team
    for line in (
        "lead → spawn correctness (read-review)",
        "lead → spawn tests (read-review)",
        "lead → spawn write-patch (write-patch)",
        "correctness → read invoice.py",
        'tests → grep "def test_" in test_invoice.py',
        "write-patch → claim_file invoice.py",
        "write-patch claimed invoice.py",
        "write-patch → edit invoice.py",
        "✓ write-patch: OK",  # the edit agent ran the real tests after its patch
        "report from correctness (succeeded, 2 findings)",
        "report from tests (succeeded, 1 finding)",
        "report from write-patch (succeeded, 0 findings, changed invoice.py)",
        "3 reports delivered to the lead, each exactly once; changed: invoice.py; no file claims left.",
    ):
        assert line in teams, teams
    assert "✗" not in teams
    # The edit agent claimed the file before it edited it, and its report came after both.
    assert (
        teams.index("write-patch claimed")
        < teams.index("write-patch → edit")
        < teams.index("report from write-patch")
    )
    [kept] = [p for p in cli_env.root.glob("corral-demo-*") if p.is_dir()]
    assert "net = max(subtotal(lines) - discount, 0.0)" in (kept / "invoice.py").read_text()
    assert "return round(net * (1 + tax_rate), 2)" in (kept / "invoice.py").read_text()  # act 1's fix
    _assert_verification_act(verify, kept)


def _assert_verification_act(verify: str, kept: Path) -> None:
    """Act 4: a failed check refuses the first report, one repair makes it pass; one index for three."""
    for line in (
        "project: now a git repository (one commit) with an acceptance test, test_rounding.py",
        "lead → spawn round-subtotal (write-patch, check unit-tests: python -m unittest -q, repair ≤1)",
        "round-subtotal → report_and_exit: not accepted, verification failed",
        "✗ check unit-tests failed: exit code 1",
        "repair requested (attempt 1 of 1): round-subtotal must make the check pass, then report again",
        "round-subtotal → read the log of check unit-tests",
        "round-subtotal reads: AssertionError: 0 != 0.3",  # the real unittest failure from the real log
        "round-subtotal → report_and_exit: accepted, verification passed, repair repaired",
        "report from round-subtotal (succeeded, 0 findings, verification passed, repair repaired, "
        "changed invoice.py)",
        "lead → spawn a completion group of 3 (all-settled delivery)",
        "readme → report_and_exit: accepted, held for the group's index",
        "group index reaches the lead (settled): 1 index for 3 members, one wake",
        "· coverage (reported, succeeded): 4 tests, rounding included",
        "1 report with verification passed, repair repaired; 1 index for 3 members reached the lead.",
    ):
        assert line in verify, verify
    assert verify.count("✗") == 1  # only the failed check
    assert (
        verify.index("not accepted")
        < verify.index("repair requested")
        < verify.index("read the log")
        < verify.index("accepted, verification passed")
        < verify.index("report from round-subtotal")
        < verify.index("spawn a completion group")
    )
    for name in ("callers", "readme", "coverage"):  # grouped reports reach the lead only in the index
        assert "held for the group's index" in verify.split(f"{name} → report_and_exit")[1].splitlines()[0]
        assert f"report from {name}" not in verify
    [log_line] = [line for line in verify.splitlines() if "log: " in line]
    log = kept / log_line.split("log: ")[1].strip()
    assert log.parent.name == "checks" and log.stat().st_mode & 0o777 == 0o600
    assert "AssertionError: 0 != 0.3" in log.read_text()
    assert (
        "return round(sum(quantity * price for _name, quantity, price in lines), 2)"
        in (kept / "invoice.py").read_text()
    )
    commits = subprocess.run(
        ["git", "-C", str(kept), "rev-list", "--count", "HEAD"], capture_output=True, text=True, check=True
    )
    assert commits.stdout.strip() == "1"


def _bundled_script(name: str) -> dict:
    import yaml

    import corral.llm

    return yaml.safe_load((Path(corral.llm.__file__).parent / "scripts" / f"{name}.yaml").read_text())


def test_demo_exits_1_when_the_repair_does_not_make_the_check_pass(corral: RunCorral, cli_env: Env) -> None:
    """The bundled act 4 with an edit agent that reports again without fixing: the repair is exhausted."""
    import yaml

    script = _bundled_script("demo-verify")
    steps = script["agents"]["round-subtotal"]
    script["agents"]["round-subtotal"] = [steps[0], steps[1], steps[1]]  # wrong patch, report, report again
    cli_env.script("demo-verify", yaml.safe_dump(script))  # CORRAL_SCRIPTS comes before the bundled scripts
    done = corral("demo", env={"TMPDIR": str(cli_env.root)}, timeout=120)
    assert done.returncode == 1, done.stdout
    verify = done.stdout.split("Act 4 —")[1]
    assert (
        "report from round-subtotal (succeeded (effective blocked), 0 findings, verification failed, "
        "repair exhausted" in verify
    )
    assert "1 report with verification failed, repair exhausted; 1 index for 3 members" in verify
    assert "Act 4 did not hold" in verify
    assert not list(cli_env.root.glob("corral-demo-*"))  # without --keep the copy is removed


async def test_demo_act_4_is_skipped_with_a_clear_line_without_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io
    import shutil

    from corral._cli import _demo

    which = shutil.which
    monkeypatch.setattr(_demo.shutil, "which", lambda cmd, *a, **k: None if cmd == "git" else which(cmd))
    out = io.StringIO()
    assert await _demo._verify_act(tmp_path, out) == 0
    assert "Act 4 skipped: git is not installed" in out.getvalue()
    assert not (tmp_path / ".git").exists() and not (tmp_path / "test_rounding.py").exists()


def test_models_lists_usable_models(corral: RunCorral) -> None:
    without = corral("models")
    assert without.returncode == 0
    assert "openai/" not in without.stdout
    with_key = corral("models", env={"OPENAI_API_KEY": "sk-test"})
    # The current default, read from the registry (not a real id that retires).
    ref = f"openai/{DEFAULT_MODELS['openai']}"
    assert f"{ref}  (default)" in with_key.stdout.splitlines()
    as_json = json.loads(corral("models", "--json", env={"OPENAI_API_KEY": "sk-test"}).stdout)
    entry = next(row for row in as_json if row["ref"] == ref)
    assert entry["contextWindow"] > 0 and entry["lifecycle"] is None
    # Prices come from the genai-prices catalogue (base rates, read here too); a scripted model's are configured.
    listed = listed_prices(ModelRegistry(environ={"OPENAI_API_KEY": "sk-test"}).resolve(ref))
    assert listed is not None
    assert (entry["pricing"], entry["cost"]["input"], entry["cost"]["output"]) == (
        "genai-prices",
        listed.input,
        listed.output,
    )
    everything = json.loads(corral("models", "--all", "--json").stdout)
    scripted = next(row for row in everything if row["provider"] == "scripted")
    assert (scripted["pricing"], scripted["cost"]["input"]) == ("settings", 0.0)


def test_models_json_marks_a_model_the_catalogue_does_not_know_as_unknown(
    corral: RunCorral, cli_env: Env
) -> None:
    cli_env.settings(
        """
[providers.local]
base_url = "http://127.0.0.1:9/v1"

[[providers.local.models]]
id = "tiny"

[[providers.local.models]]
id = "priced"
prices = { input = 0.5, output = 1.5 }
"""
    )
    rows = {row["ref"]: row for row in json.loads(corral("models", "--all", "--json").stdout)}
    assert rows["local/tiny"]["pricing"] == "unknown"
    assert rows["local/tiny"]["cost"] == {"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0}
    assert (rows["local/priced"]["pricing"], rows["local/priced"]["cost"]["output"]) == ("settings", 1.5)


def test_custom_provider_over_http(corral: RunCorral, cli_env: Env) -> None:
    from tests.llm.fake_server import FakeProviderServer

    with FakeProviderServer() as server:
        server.queue_text("hello from the local server")
        cli_env.settings(
            f"""
[providers.local]
base_url = "{server.base_url}"
api = "openai-chat"
headers = {{ "X-Team" = "corral" }}

[[providers.local.models]]
id = "tiny"
context_window = 8192
max_tokens = 1024
"""
        )
        done = corral("run", "--model", "local/tiny", "-p", "hi")
        assert done.returncode == 0, done.stderr
        assert done.stdout == "hello from the local server\n"
        assert server.requests[-1].body["model"] == "tiny"
        assert server.requests[-1].headers["x-team"] == "corral"


def test_corral_continues_a_session_written_by_pi(corral: RunCorral, cli_env: Env) -> None:
    """A file written by Pi's rules (every entry type, a compaction, a branch, an unknown entry kind) is
    continued: old lines stay byte-identical, new entries chain onto Pi's last entry."""
    from pathlib import Path

    fixture = Path(__file__).parents[1] / "session" / "fixtures" / "pi_v3_full.jsonl"
    target = cli_env.root / "pi-session.jsonl"
    original = fixture.read_text()
    target.write_text(original)
    cli_env.script(
        "cont", "steps:\n  - text: continued by corral\n    expect: {context_contains: ['fertig']}\n"
    )
    done = corral("run", "--session", str(target), "--model", "scripted/cont", "-p", "go on")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "continued by corral\n"
    text = target.read_text()
    assert text.startswith(original)
    old_last_id = json.loads(original.splitlines()[-1])["id"]
    appended = [json.loads(line) for line in text[len(original) :].splitlines()]
    assert appended[0]["parentId"] == old_last_id
    roles = [entry["message"]["role"] for entry in appended if entry["type"] == "message"]
    assert roles == ["user", "assistant"]
    assert all(len(entry["id"]) == 8 for entry in appended)


def test_sigterm_aborts_the_run_keeps_the_partial_reply_and_exits_1(cli_env: Env) -> None:
    import signal

    cli_env.script("slow", "steps:\n  - text: never\n    delay_ms: 60000\n")
    with subprocess.Popen(
        [CORRAL, "run", "--mode", "json", "--model", "scripted/slow", "-p", "hi"],
        cwd=cli_env.project,
        env=cli_env.vars,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        starts = 0
        while starts < 2:  # the user message, then the assistant message: the request is in flight
            line = proc.stdout.readline()
            assert line
            starts += json.loads(line)["type"] == "message_start"
        proc.send_signal(signal.SIGTERM)
        rest = proc.stdout.read()
        assert proc.wait(timeout=30) == 1
        assert "aborted" in proc.stderr.read()
    ends = [json.loads(line) for line in rest.splitlines() if '"message_end"' in line]
    assert ends[-1]["message"]["stopReason"] == "aborted"
    [path] = cli_env.sessions()
    last = json.loads(path.read_text().splitlines()[-1])
    assert last["message"]["stopReason"] == "aborted"


def test_openai_responses_over_http_runs_tools_and_retries_a_transient_error(
    corral: RunCorral, cli_env: Env
) -> None:
    """The real provider path end to end: OPENAI_BASE_URL/OPENAI_API_KEY, a tool call executed for
    real, the tool result sent back, a 503 retried (the retry delay is the settings' base delay)."""
    from tests.llm.fake_server import FakeProviderServer

    (cli_env.project / "hello.txt").write_text("hi from disk\n")
    cli_env.settings("[retry]\nbase_delay_ms = 10\n")
    with FakeProviderServer() as server:
        server.queue_tool_call("read", {"path": "hello.txt"})
        server.queue_error(503, "service unavailable")
        server.queue_text("The file says hi.")
        done = corral(
            "run",
            "--model",
            "openai/gpt-5",
            "-p",
            "read hello.txt",
            env={"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.base_url},
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout == "The file says hi.\n"
        paths = [r.path for r in server.requests]
        assert paths == ["/v1/responses"] * 3
        assert server.requests[0].headers["authorization"] == "Bearer sk-test"
        assert "hi from disk" in json.dumps(server.requests[1].body)  # the tool result went back
