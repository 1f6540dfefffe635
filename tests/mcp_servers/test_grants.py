"""Who gets what (`narrow`), the grant in the worker launch, definitions' `mcp` and Claude Code's
`mcpServers`, tool names, and the `[mcp_servers]` settings' checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from corral.mcp_servers import NO_MCP, McpGrant, lead_grant, mcp_tool_name, narrow
from corral.orchestration import ModelNames, load_roster
from corral.orchestration.host.protocol import LaunchError, ManagedAgentSpec, WorkerLaunch
from corral.settings import McpServerSettings, SettingsError, read_settings_file


def test_children_keep_at_most_their_parents_servers() -> None:
    lead = lead_grant(
        {
            "git": McpServerSettings(command="git-mcp"),
            "web": McpServerSettings(url="https://example.test/mcp"),
            "off": McpServerSettings(command="x", enabled=False),
        }
    )
    assert lead == McpGrant(("git", "web"))
    assert narrow(lead, "inherit", read_only=False) == (lead, ())
    assert narrow(lead, "none", read_only=False) == (McpGrant(()), ())
    assert narrow(lead, ("web", "off", "nope"), read_only=False) == (McpGrant(("web",)), ("off", "nope"))
    reader, _ = narrow(lead, "inherit", read_only=True)
    assert reader == McpGrant(("git", "web"), read_only=True)
    # Below a read agent every agent is read-only; below a narrowed one, no server comes back.
    assert narrow(reader, "inherit", read_only=False)[0].read_only
    assert narrow(McpGrant(("web",)), ("git", "web"), read_only=False) == (McpGrant(("web",)), ("git",))
    assert narrow(NO_MCP, "inherit", read_only=False) == (NO_MCP, ())


def test_the_grant_crosses_to_workers_in_the_launch_description() -> None:
    spec = ManagedAgentSpec(
        label="a",
        definition="d",
        model_ref="scripted/x",
        thinking="off",
        tool_names=("read",),
        body="",
        system_prompt_mode="append",
        mcp=McpGrant(("git",), read_only=True),
    )
    text = WorkerLaunch(spec).to_json()
    assert json.loads(text)["agent"]["mcp"] == {"servers": ["git"], "readOnly": True}
    assert WorkerLaunch.from_json(text).agent == spec
    # A version-1 description (before MCP) reads as an agent without servers.
    old = json.loads(text)
    old["version"] = 1
    del old["agent"]["mcp"]
    assert WorkerLaunch.from_json(json.dumps(old)).agent.mcp is None
    old["agent"]["mcp"] = {"servers": "git"}
    with pytest.raises(
        LaunchError, match="the launch's agent `mcp`: the MCP grant's `servers` is not a list"
    ):
        WorkerLaunch.from_json(json.dumps(old))


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_definitions_say_mcp_and_claude_codes_mcp_servers_maps_to_it(tmp_path: Path) -> None:
    (tmp_path / "project").mkdir()
    user = tmp_path / "user"
    _write(user / "a.md", "---\nname: a\nmcp: none\n---\nx\n")
    _write(user / "b.md", "---\nname: b\nmcp: [git, web]\n---\nx\n")
    _write(user / "c.md", "---\nname: c\nmcp: all\n---\nx\n")
    _write(user / "d.md", "---\nname: d\nmcp: [git__x]\n---\nx\n")
    claude = tmp_path / "home" / ".claude" / "agents"
    _write(claude / "e.md", "---\nname: e\ndescription: d\nmcpServers: [github, slack]\n---\nx\n")
    _write(claude / "f.md", "---\nname: f\ndescription: d\nmcpServers:\n  - db:\n      command: x\n---\nx\n")
    roster = load_roster(
        tmp_path / "project", user_dir=user, home=tmp_path / "home", trust=False, models=ModelNames()
    )
    got = {name: roster.get(name) for name in "abe"}
    assert {name: defn.mcp for name, defn in got.items() if defn is not None} == {
        "a": "none",
        "b": ("git", "web"),
        "e": ("github", "slack"),
    }
    assert roster.get("b").metadata()["mcp"] == ["git", "web"]  # type: ignore[union-attr]
    problems = {issue.path.name: issue.problem for issue in roster.issues}
    assert (
        problems["c.md"]
        == "mcp must be inherit, none or a list of MCP server names (from [mcp_servers]), got 'all'"
    )
    assert problems["d.md"] == "mcp: 'git__x' is not an MCP server name"
    assert problems["f.md"] == (
        "mcpServers: the inline server db is not supported; configure it as [mcp_servers.db] in corral's "
        "settings and list its name here"
    )


def test_tool_names_are_claude_codes_and_valid_for_every_provider() -> None:
    assert mcp_tool_name("git", "git_status") == "mcp__git__git_status"
    assert mcp_tool_name("everything", "get-sum") == "mcp__everything__get-sum"
    dotted = mcp_tool_name("x", "files.read")
    assert dotted.startswith("mcp__x__files_read_") and dotted != mcp_tool_name("x", "files_read")
    long = mcp_tool_name("server", "t" * 100)
    assert len(long) == 64 and long != mcp_tool_name("server", "t" * 99)


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        (
            '[mcp_servers.a]\nargs = ["x"]\n',
            "give `command` (a stdio server) or `url` (a streamable HTTP server), exactly one of them",
        ),
        ('[mcp_servers.a]\ncommand = "x"\nurl = "http://h"\n', "exactly one of them"),
        (
            '[mcp_servers.a]\nurl = "http://h"\nenv = {A = "b"}\n',
            "`env` is for a stdio server (`command`), not one with a `url`",
        ),
        (
            '[mcp_servers.a]\ncommand = "x"\nheaders = {A = "b"}\n',
            "`headers` is for an HTTP server (`url`), not one with a `command`",
        ),
        ('[mcp_servers.a]\nurl = "ftp://h"\n', "url 'ftp://h' must start with http:// or https://"),
        ('[mcp_servers."a b"]\ncommand = "x"\n', "'a b' is not a server name"),
        ('[mcp_servers.a__b]\ncommand = "x"\n', "'a__b' is not a server name"),
        (
            '[mcp_servers.a]\ncommand = "x"\ntool_timeout_s = 0\n',
            "'mcp_servers.a.tool_timeout_s': Input should be greater than 0",
        ),
        ('[mcp_servers.a]\ncommand = "x"\ntimeout = 3\n', "unknown key 'mcp_servers.a.timeout'"),
    ],
)
def test_bad_server_settings_say_what_to_fix(tmp_path: Path, toml: str, message: str) -> None:
    path = tmp_path / "settings.toml"
    path.write_text(toml)
    with pytest.raises(SettingsError) as raised:
        read_settings_file(path)
    assert message in str(raised.value) and str(path) in str(raised.value)


def test_good_server_settings_read_back(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    path.write_text(
        '[mcp_servers.git]\ncommand = "uvx"\nargs = ["mcp-server-git"]\nstartup_timeout_s = 10\n'
        '[mcp_servers.web]\nurl = "https://example.test/mcp"\nheaders = {Authorization = "Bearer t"}\nenabled = false\n'
    )
    servers = read_settings_file(path).mcp_servers
    assert servers["git"].transport == "stdio" and servers["git"].startup_timeout_s == 10.0
    assert servers["web"].transport == "http" and not servers["web"].enabled
    assert servers["git"].tool_timeout_s == 120.0


def test_an_agent_handed_off_to_a_worker_keeps_its_grant(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from corral.agent import AgentSession
    from corral.llm import ModelRegistry
    from corral.mcp_servers import McpServers
    from corral.orchestration.host._handoff import _built_agent
    from corral.session import SessionManager
    from corral.settings import Settings

    registry = ModelRegistry(Settings(), cwd=tmp_path)
    model = registry.create_model(registry.resolve("scripted/hello"), cwd=tmp_path)
    agent = AgentSession(
        session=SessionManager.create(tmp_path, persist=False),
        model=model,
        thinking_level="off",
        tools=[],
        cwd=tmp_path,
    )
    servers = McpServers({"git": McpServerSettings(command="git-mcp")}, log_dir=None)
    grant = McpGrant(("git",), read_only=True)
    servers.remember(agent.session.session_id, grant)
    built = _built_agent(SimpleNamespace(mcp_servers=servers), SimpleNamespace(agent=agent))  # type: ignore[arg-type]
    assert built.mcp == grant
