"""The user's policy and MCP servers reach ACP harness agents: their permission requests and file
requests pass the same `[permissions]` rules and PreToolUse hooks as corral's own agents of that place
in the tree (a denial rejects, an allow rule approves, without a question to the owner), and the MCP
servers their grant gives them go to the agent in `session/new` — through a real host, against the
scripted fake ACP agent (`fake_acp_agent.py`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from corral.harness.acp import SESSION_ENTRY
from corral.orchestration import ASK_TYPE
from corral.orchestration.surfaces import DelegateParams, ReplyParams
from corral.session import CustomEntry, SessionManager
from corral.settings import Settings
from tests.harness.test_acp_agents import FAKE, _define, _results, acp_env
from tests.orchestration._host_helpers import team

__all__ = ["acp_env"]


def _received(env: Path, method: str) -> list[dict[str, Any]]:
    """The params of every `method` message the fake agent received."""
    log = env / "fake.jsonl"
    lines = log.read_text().splitlines() if log.exists() else []
    return [m["params"] for m in map(json.loads, lines) if m.get("method") == method]


def _tool_results(session_path: str | None) -> list[str]:
    assert session_path is not None
    with SessionManager.open(Path(session_path), read_only=True) as saved:
        return [
            "".join(getattr(block, "text", "") for block in m.content)
            for m in saved.build_context().messages
            if m.role == "toolResult"
        ]


def _session_entry(session_path: str | None) -> dict[str, Any]:
    assert session_path is not None
    with SessionManager.open(Path(session_path), read_only=True) as saved:
        found = [
            e.data for e in saved.entries if isinstance(e, CustomEntry) and e.custom_type == SESSION_ENTRY
        ]
    assert found and isinstance(found[-1], dict)
    return found[-1]


def _deny_hook(env: Path) -> dict[str, Any]:
    """A PreToolUse hook on `Bash` that logs its event and blocks `rm` with exit code 2."""
    script = env / "no-rm.py"
    script.write_text(
        "import json, sys\n"
        "event = json.load(sys.stdin)\n"
        f"with open({str(env / 'events.jsonl')!r}, 'a') as log:\n"
        "    log.write(json.dumps(event) + '\\n')\n"
        "if event['tool_input']['command'].startswith('rm '):\n"
        "    sys.stderr.write('no rm for ' + event['agent_label'])\n"
        "    sys.exit(2)\n"
    )
    hook = {"type": "command", "command": f"{sys.executable} {script}"}
    return {"PreToolUse": [{"matcher": "Bash", "hooks": [hook]}]}


@pytest.mark.parametrize("by", ["rule", "hook"])
async def test_a_denied_command_is_rejected_without_asking_the_owner(acp_env: Path, by: str) -> None:
    settings = Settings.model_validate(
        {"permissions": {"deny": ["Bash(rm:*)"]}} if by == "rule" else {"hooks": _deny_hook(acp_env)}
    )
    async with team(acp_env, "lead", settings=settings) as t:
        work = Path(t.caller.cwd)
        (work / "x").mkdir()
        (work / "x" / "keep.txt").write_text("kept")
        started = await t.controller.delegate(
            t.caller, DelegateParams(definition="fake", task="RUN rm -rf x")
        )
        await t.quiet()
        assert t.lead_entries(ASK_TYPE) == []  # no question reached the owner
        (result,) = _results(t)
        assert "denied: reject-once" in result
        assert (work / "x" / "keep.txt").read_text() == "kept"
        (shown,) = _tool_results(started.session_path)
        reason = "the permission rule `Bash(rm:*)` denies it" if by == "rule" else "no rm for fake"
        assert shown.startswith(f"bash was not run: {reason}")
    if by == "hook":
        (event,) = [json.loads(line) for line in (acp_env / "events.jsonl").read_text().splitlines()]
        assert (event["tool_name"], event["corral_tool_name"]) == ("Bash", "bash")
        assert event["tool_input"]["command"] == "rm -rf x"
        assert (event["agent_id"], event["agent_label"], event["agent_type"]) == (
            started.run_id,
            "fake",
            "fake",
        )
        assert event["parent_agent_id"] == started.owner_session_id
        assert event["lead_session_id"] == started.owner_session_id
        assert event["session_id"] == started.session_id and event["transcript_path"] == started.session_path


async def test_an_allow_rule_approves_without_asking_and_what_no_rule_decides_is_asked(acp_env: Path) -> None:
    settings = Settings.model_validate({"permissions": {"allow": ["Bash(touch:*)"]}})
    async with team(acp_env, "lead", settings=settings) as t:
        work = Path(t.caller.cwd)
        await t.controller.delegate(t.caller, DelegateParams(definition="fake", task="RUN touch made.txt"))
        await t.quiet()
        assert t.lead_entries(ASK_TYPE) == []
        (result,) = _results(t)
        assert "ran: allow-once" in result  # never `allow-always`: later calls still come to corral
        assert (work / "made.txt").exists()
        # no rule matches `mkdir` (calls are allowed by default): the owner is asked, as before
        await t.controller.delegate(t.caller, DelegateParams(definition="fake", task="RUN mkdir asked"))
        await t.quiet()
        (ask,) = t.lead_entries(ASK_TYPE)
        assert "mkdir asked" in ask["content"] and not (work / "asked").exists()
        await t.controller.reply(t.caller, ReplyParams(agent="fake", message="allow once"))
        await t.quiet()
        assert "ran: allow-once" in _results(t)[1] and (work / "asked").is_dir()


async def test_a_write_outside_the_allowed_files_is_refused_and_nothing_is_written(acp_env: Path) -> None:
    settings = Settings.model_validate({"permissions": {"allow": ["Edit(src/**)"], "default": "deny"}})
    async with team(acp_env, "lead", settings=settings) as t:
        work = Path(t.caller.cwd)
        await t.controller.delegate(
            t.caller, DelegateParams(definition="fake", task="WRITE notes.txt secret")
        )
        await t.quiet()
        await t.controller.delegate(t.caller, DelegateParams(definition="fake", task="WRITE src/a.txt fine"))
        await t.quiet()
        refused, wrote = _results(t)
        assert "refused: write" in refused and "permissions.default denies it" in refused
        assert not (work / "notes.txt").exists()
        assert "wrote" in wrote and (work / "src" / "a.txt").read_text() == "fine"
        assert t.lead_entries(ASK_TYPE) == []


async def test_a_read_a_rule_denies_is_refused(acp_env: Path) -> None:
    settings = Settings.model_validate({"permissions": {"deny": ["Read(.env)"]}})
    async with team(acp_env, "lead", settings=settings) as t:
        (Path(t.caller.cwd) / ".env").write_text("TOKEN=secret")
        await t.controller.delegate(t.caller, DelegateParams(definition="fake", task="READ .env"))
        await t.quiet()
        (result,) = _results(t)
        assert "refused: read" in result and "Read(.env)" in result and "secret" not in result


async def test_a_write_the_rules_ask_about_goes_to_the_owner(acp_env: Path) -> None:
    settings = Settings.model_validate({"permissions": {"ask": ["Edit(src/**)"]}})
    async with team(acp_env, "lead", settings=settings) as t:
        work = Path(t.caller.cwd)
        await t.controller.delegate(t.caller, DelegateParams(definition="fake", task="WRITE src/b.txt yes"))
        await t.quiet()
        (ask,) = t.lead_entries(ASK_TYPE)
        assert "src/b.txt" in ask["content"] and "Edit(src/**)" in ask["content"]
        assert not (work / "src" / "b.txt").exists()
        await t.controller.reply(t.caller, ReplyParams(agent="fake", message="reject"))
        await t.quiet()
        (result,) = _results(t)
        assert "refused: write" in result and "not approved" in result
        assert not (work / "src" / "b.txt").exists()


# --- MCP servers ---------------------------------------------------------------------------------

MCP = {
    "tiny": {"command": "tiny-mcp", "args": ["--flag"], "env": {"TOKEN": "t1"}},
    "here": {"command": "other-mcp", "cwd": "/srv/mcp"},
    "web": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer x"}},
    "off": {"command": "off-mcp", "enabled": False},
}


@pytest.mark.parametrize("http", [False, True], ids=["stdio-only", "http"])
async def test_the_granted_mcp_servers_go_to_the_agent_in_session_new(
    acp_env: Path, monkeypatch: pytest.MonkeyPatch, http: bool
) -> None:
    if http:
        monkeypatch.setenv("FAKE_ACP_MCP_HTTP", "1")
    async with team(acp_env, "lead", settings=Settings.model_validate({"mcp_servers": MCP})) as t:
        started = await t.controller.delegate(t.caller, DelegateParams(definition="fake", task="hi"))
        await t.quiet()
    (params,) = _received(acp_env, "session/new")
    by_name = {server["name"]: server for server in params["mcpServers"]}
    assert by_name["tiny"] == {
        "name": "tiny",
        "command": "tiny-mcp",
        "args": ["--flag"],
        "env": [{"name": "TOKEN", "value": "t1"}],
    }
    here = by_name["here"]
    assert here["command"] == "/bin/sh" and here["args"][-2:] == ["/srv/mcp", "other-mcp"]
    assert "off" not in by_name
    entry = _session_entry(started.session_path)
    if http:
        assert by_name["web"] == {
            "type": "http",
            "name": "web",
            "url": "https://mcp.example.com/mcp",
            "headers": [{"name": "Authorization", "value": "Bearer x"}],
        }
        assert "mcpWithheld" not in entry
    else:
        assert "web" not in by_name
        assert "mcpCapabilities.http" in entry["mcpWithheld"]["web"]
    assert sorted(entry["mcpServers"]) == sorted(by_name)


async def test_a_definition_that_names_servers_or_none_gets_those(acp_env: Path) -> None:
    _define(
        acp_env,
        "named",
        harness="acp",
        command=[sys.executable, str(FAKE)],
        runtime="inprocess",
        mcp=["tiny"],
    )
    _define(
        acp_env, "bare", harness="acp", command=[sys.executable, str(FAKE)], runtime="inprocess", mcp="none"
    )
    async with team(acp_env, "lead", settings=Settings.model_validate({"mcp_servers": MCP})) as t:
        await t.controller.delegate(t.caller, DelegateParams(definition="named", task="hi"))
        await t.quiet()
        await t.controller.delegate(t.caller, DelegateParams(definition="bare", task="hi"))
        await t.quiet()
    named, bare = _received(acp_env, "session/new")
    assert [server["name"] for server in named["mcpServers"]] == ["tiny"]
    assert bare["mcpServers"] == []


async def test_a_read_agent_gets_no_mcp_server_and_its_session_says_why(acp_env: Path) -> None:
    _define(
        acp_env,
        "reader",
        harness="acp",
        command=[sys.executable, str(FAKE)],
        runtime="inprocess",
        tools=["read"],
    )
    async with team(acp_env, "lead", settings=Settings.model_validate({"mcp_servers": MCP})) as t:
        started = await t.controller.delegate(t.caller, DelegateParams(definition="reader", task="hi"))
        await t.quiet()
    (params,) = _received(acp_env, "session/new")
    assert params["mcpServers"] == []
    withheld = _session_entry(started.session_path)["mcpWithheld"]
    assert sorted(withheld) == ["here", "tiny", "web"] and "a read agent" in withheld["tiny"]


@pytest.mark.parametrize(
    ("kind", "title", "raw", "locations", "expected"),
    [
        ("execute", "rm -rf x", {"command": ["/bin/bash", "-lc", "rm -rf x"]}, None, [("bash", "rm -rf x")]),
        (
            "execute",
            "ls",
            {"command": ["git", "commit", "-m", "a b"]},
            None,
            [("bash", "git commit -m 'a b'")],
        ),
        ("execute", "`npm test`", {}, None, [("bash", "npm test")]),
        ("edit", "Edit a.py", {"file_path": "/w/a.py"}, None, [("edit", "/w/a.py")]),
        ("move", "mv", {}, [{"path": "/w/a"}, {"path": "/w/b"}], [("edit", "/w/a"), ("edit", "/w/b")]),
        ("delete", "rm", {}, [{"path": "/w/a"}], [("edit", "/w/a")]),
        ("read", "Read", {"path": "/w/r"}, None, [("read", "/w/r")]),
        ("search", "grep", {"pattern": "x"}, None, [("grep", None)]),
        ("fetch", "fetch", {"url": "https://x.test"}, None, [("WebFetch", None)]),
        ("other", "mcp__github__get_issue", {"n": 1}, None, [("mcp__github__get_issue", None)]),
        ("other", "Do a thing!", {}, None, [("other", None)]),
        ("other", "shell · rm -rf x", {"command": "rm -rf x"}, None, [("bash", "rm -rf x")]),
        (
            "other",
            "text_editor · a",
            {"command": "view", "path": "/w/a"},
            None,
            [("read", "/w/a"), ("edit", "/w/a")],
        ),
    ],
)
def test_acp_tool_calls_map_to_the_tools_rules_name(
    kind: str, title: str, raw: dict[str, Any], locations: object, expected: list[tuple[str, str | None]]
) -> None:
    from corral.harness.acp._tools import tool_calls

    calls = tool_calls(kind, title, raw, locations)
    got = [(name, args.get("command") if name == "bash" else args.get("path")) for name, args in calls]
    assert got == expected
