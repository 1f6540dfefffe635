"""A project's `.mcp.json` and `.codex/config.toml` under trust, `mcp_import` of the user's Claude Code
and Codex servers, precedence, and the listing from the runtime's own resolution — with real files in
a private home, the real trust store, and `tiny_server.py` started by a scripted lead."""

from __future__ import annotations

import asyncio
import io
import json
import os
import sys
from pathlib import Path

import pytest

from corral._cli._doctor import _check_mcp_servers
from corral._cli._trust import trust
from corral._cli.mcp_servers import list_servers
from corral.lead import Launched
from corral.llm import TextContent
from corral.settings import SettingsError, load_settings
from corral.trust import pinned_files, trust_project, trust_state

from .conftest import TINY, WAIT, McpEnv, tiny


def _mcp_json(work: Path, servers: dict[str, object]) -> None:
    (work / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))


def _codex(directory: Path, text: str) -> Path:
    path = directory / ".codex" / "config.toml" if directory.name != ".codex" else directory / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _tiny_json(marker: Path) -> dict[str, object]:
    """`.mcp.json`'s entry for `tiny_server.py`, its paths given through `${…}` expansion."""
    return {
        "command": "${TINY_PYTHON}",
        "args": ["${TINY_DIR:-/nowhere}/tiny_server.py", "${TINY_MODE:-ok}"],
        "env": {"TINY_STARTED": str(marker)},
    }


@pytest.fixture
def expand_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TINY_PYTHON", sys.executable)
    monkeypatch.setenv("TINY_DIR", str(TINY.parent))
    monkeypatch.delenv("TINY_MODE", raising=False)


def _listing(cwd: Path) -> dict[str, object]:
    out = io.StringIO()
    assert list_servers(cwd, as_json=True, out=out) == 0
    return json.loads(out.getvalue())


def _texts(launched: Launched) -> str:
    """Every message text of the lead's session (delivered results included)."""
    parts: list[str] = []
    for message in launched.agent.messages:
        content = getattr(message, "content", None)
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(block.text for block in content if isinstance(block, TextContent))
    return "\n".join(parts)


async def _run(launched: Launched) -> None:
    await asyncio.wait_for(launched.agent.prompt("go"), WAIT)
    await asyncio.wait_for(launched.wait_until_quiet(), WAIT)


async def test_an_untrusted_projects_mcp_json_starts_nothing(
    mcp_env: McpEnv, expand_env: None, lead_of: list[Launched]
) -> None:
    marker = mcp_env.root / "started.txt"
    mcp_env.settings({})
    _mcp_json(mcp_env.work, {"tiny": _tiny_json(marker)})
    _codex(mcp_env.work, f'[mcp_servers.cx]\ncommand = "{sys.executable}"\nargs = ["{TINY}"]\n')
    mcp_env.script([{"expect": {"tools_exclude": ["mcp__tiny__add", "mcp__cx__add"]}, "text": "nothing"}])
    launched = await mcp_env.lead()
    lead_of.append(launched)
    await _run(launched)
    assert launched.mcp_servers is None and not marker.exists()
    real = os.path.realpath(mcp_env.work)
    [notice] = [line for line in launched.settings_warnings if "MCP" in line]
    assert "the MCP servers of its .mcp.json and .codex/config.toml" in notice
    assert f"corral trust {real}" in notice
    [doctor] = _check_mcp_servers(load_settings(mcp_env.work))
    assert doctor.status == "warn" and doctor.message.startswith(
        "the MCP servers of .mcp.json, .codex/config.toml are ignored"
    )
    shown = io.StringIO()
    trust(mcp_env.work, show=True, out=shown)  # what trusting would start, before it does
    assert (
        f"  MCP server tiny (.mcp.json): starts {sys.executable} {TINY} ok with your rights"
        in shown.getvalue()
    )
    assert not marker.exists()
    listed = _listing(mcp_env.work)
    assert listed["servers"] == []
    assert listed["untrusted"] == (
        f"the MCP servers of .mcp.json, .codex/config.toml are ignored: the project {real} is not "
        f"trusted; review with `corral trust --show {real}`, then run `corral trust {real}` if you trust it"
    )


async def test_a_trusted_projects_servers_reach_the_lead_and_an_edit_untrusts(
    mcp_env: McpEnv, expand_env: None, lead_of: list[Launched]
) -> None:
    marker = mcp_env.root / "started.txt"
    mcp_env.settings({})
    _mcp_json(mcp_env.work, {"tiny": _tiny_json(marker)})
    _codex(
        mcp_env.work,
        f'model = "o4"\n[mcp_servers.cx]\ncommand = "{sys.executable}"\nargs = ["{TINY}"]\n'
        f'env = {{ TINY_STARTED = "{marker}" }}\ntool_timeout_sec = 30\n',
    )
    mcp_env.definition("helper", "description: Any task.\ntools: [read, bash]")
    trust_project(mcp_env.work)
    delegate = {"action": "delegate", "definition": "helper", "task": "t", "label": "h"}
    mcp_env.script(
        [
            {
                "expect": {"tools_include": ["mcp__tiny__add", "mcp__cx__echo"]},
                "tool_calls": [
                    {"name": "mcp__tiny__add", "args": {"a": 40, "b": 2}},
                    {"name": "mcp__cx__echo", "args": {"message": "from codex"}},
                    {"name": "agent", "args": delegate},
                ],
            },
            {"expect": {"tools_ok": True, "context_contains": ["42", "Echo: from codex"]}, "text": "ok"},
        ],
        agents={
            "h": [
                {"tool_calls": [{"name": "mcp__tiny__echo", "args": {"message": "from the helper"}}]},
                {"expect": {"tools_ok": True}, "text": "helper said {{ last_tool_output }}"},
            ]
        },
    )
    launched = await mcp_env.lead()
    lead_of.append(launched)
    await _run(launched)
    assert launched.host is not None
    await asyncio.wait_for(launched.host.wait_until_quiet(launched.session.session_id), WAIT)
    # The helper inherited the project's servers; the host's one session of each served both agents.
    assert "helper said Echo: from the helper" in _texts(launched)
    assert len(marker.read_text().split()) == 2
    rows = {row["name"]: row for row in _listing(mcp_env.work)["servers"]}
    assert rows["tiny"]["source"] == ".mcp.json" and rows["tiny"]["state"] == "used"
    assert rows["tiny"]["target"] == f"{sys.executable} {TINY} ok"  # expanded, the default taken
    assert rows["cx"]["source"] == ".codex/config.toml" and rows["cx"]["toolTimeoutS"] == 30
    # Editing either file untrusts the project: its servers are ignored again.
    for name, edit in ((".mcp.json", '{"mcpServers": {}}'), (".codex/config.toml", 'model = "o3"\n')):
        trust_project(mcp_env.work)
        (mcp_env.work / name).write_text(edit)
        state = trust_state(mcp_env.work)
        assert not state.trusted and state.changed == f"{name} was edited since it was trusted"
        settings = load_settings(mcp_env.work)
        assert settings.mcp_servers == {}
        assert f"is no longer trusted: {name} was edited" in (settings.mcp_catalog.untrusted or "")


def test_adding_an_mcp_file_untrusts_and_a_link_out_is_pinned_not_read(
    mcp_env: McpEnv, tmp_path: Path
) -> None:
    work = mcp_env.work
    trust_project(work)
    _mcp_json(work, {"x": {"command": "x"}})
    assert trust_state(work).changed == ".mcp.json was added since it was trusted"
    secret = tmp_path / "secret.json"
    secret.write_text('{"mcpServers": {"leak": {"command": "cat"}}}')
    (work / ".mcp.json").unlink()
    (work / ".mcp.json").symlink_to(secret)
    assert pinned_files(work)[".mcp.json"] == f"link:{secret}"
    trust_project(work)
    settings = load_settings(work)
    assert settings.mcp_servers == {}
    [problem] = settings.mcp_catalog.problems
    assert problem.startswith(f"{work.resolve()}/.mcp.json: not read: it links to {secret}")


def test_the_users_servers_win_a_clash_and_the_loser_is_listed_as_shadowed(
    mcp_env: McpEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(mcp_env.root))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR")  # the suite points it at an empty directory
    mcp_env.settings({"tiny": tiny(), "own": tiny()}, extra='mcp_import = ["claude"]')
    (mcp_env.root / ".claude.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "tiny": {"command": "claude-tiny"},
                    "web": {"type": "http", "url": "http://a/mcp"},
                }
            }
        )
    )
    _mcp_json(mcp_env.work, {"own": {"command": "project-own"}, "web": {"command": "project-web"}})
    trust_project(mcp_env.work)
    settings = load_settings(mcp_env.work)
    assert settings.mcp_servers["tiny"].command == sys.executable
    assert settings.mcp_servers["own"].command == sys.executable
    assert settings.mcp_servers["web"].url == "http://a/mcp"  # imports rank above the project
    states = {(e.name, e.source): (e.state, e.reason) for e in settings.mcp_catalog.entries}
    user = str(mcp_env.config / "settings.toml")
    assert states[("tiny", "imported claude")] == (
        "shadowed",
        f"by the server of that name in user settings ({user})",
    )
    assert states[("own", ".mcp.json")][0] == "shadowed"
    assert states[("web", ".mcp.json")] == (
        "shadowed",
        f"by the server of that name in imported claude ({mcp_env.root / '.claude.json'})",
    )


def test_mcp_import_reads_claude_and_codex_only_on_request(
    mcp_env: McpEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = mcp_env.root / "userhome"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR")  # the suite points them at empty directories
    monkeypatch.delenv("CODEX_HOME")
    monkeypatch.setenv("GH_TOKEN", "tok")
    real = os.path.realpath(mcp_env.work)
    (home / ".claude.json").write_text(
        json.dumps(
            {
                "mcpServers": {"top": {"command": "top-server"}, "both": {"command": "user-scope"}},
                "projects": {
                    real: {
                        "mcpServers": {
                            "local": {"command": "local-server"},
                            "both": {"command": "local-scope"},
                        }
                    },
                    "/elsewhere": {"mcpServers": {"other": {"command": "x"}}},
                },
            }
        )
    )
    _codex(home, '[mcp_servers.gh]\nurl = "https://gh.test/mcp"\nbearer_token_env_var = "GH_TOKEN"\n')
    mcp_env.settings({})
    assert load_settings(mcp_env.work).mcp_servers == {}  # not without asking
    mcp_env.settings({}, extra='mcp_import = ["claude", "codex"]')
    settings = load_settings(mcp_env.work)
    assert sorted(settings.mcp_servers) == ["both", "gh", "local", "top"]
    assert (
        settings.mcp_servers["both"].command == "local-scope"
    )  # the project's entry wins, as in Claude Code
    assert settings.mcp_servers["gh"].headers == {"Authorization": "Bearer tok"}
    sources = {e.name: e.source for e in settings.mcp_catalog.entries if e.state == "used"}
    assert sources == {
        "both": "imported claude",
        "gh": "imported codex",
        "local": "imported claude",
        "top": "imported claude",
    }
    # $CLAUDE_CONFIG_DIR and $CODEX_HOME move the files, as they move Claude Code's and Codex's.
    elsewhere = mcp_env.root / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / ".claude.json").write_text(json.dumps({"mcpServers": {"moved": {"command": "m"}}}))
    _codex(elsewhere / ".codex", '[mcp_servers.cmoved]\ncommand = "c"\nenabled = false\n')
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(elsewhere))
    monkeypatch.setenv("CODEX_HOME", str(elsewhere / ".codex"))
    moved = load_settings(mcp_env.work)
    assert sorted(moved.mcp_servers) == ["cmoved", "moved"]
    assert [e.state for e in moved.mcp_catalog.entries if e.name == "cmoved"] == ["disabled"]


@pytest.mark.parametrize("value", ['["cursor"]', '"claude"', "[1]"])
def test_a_bad_mcp_import_is_a_one_line_settings_error(mcp_env: McpEnv, value: str) -> None:
    mcp_env.settings({}, extra=f"mcp_import = {value}")
    with pytest.raises(SettingsError) as caught:
        load_settings(mcp_env.work)
    message = str(caught.value)
    assert "\n" not in message and "invalid value for 'mcp_import'" in message
    assert 'give a list of "claude" and "codex"' in message


def test_a_project_may_not_set_mcp_import(mcp_env: McpEnv) -> None:
    mcp_env.settings({})
    (mcp_env.work / ".corral").mkdir()
    (mcp_env.work / ".corral" / "settings.toml").write_text('mcp_import = ["claude"]\n')
    trust_project(mcp_env.work)
    warnings: list[str] = []
    settings = load_settings(mcp_env.work, on_warning=warnings.append)
    assert settings.mcp_import == [] and settings.mcp_servers == {}
    assert warnings == [
        f"{mcp_env.work / '.corral' / 'settings.toml'}: ignoring `mcp_import`; imports of other programs' "
        "MCP servers are read from the user settings only"
    ]


def test_bad_entries_are_ignored_with_one_line_each_and_a_broken_file_is_named(
    mcp_env: McpEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NOT_SET_ANYWHERE", raising=False)
    mcp_env.settings({})
    _mcp_json(
        mcp_env.work,
        {
            "events": {"type": "sse", "url": "https://x.test/sse"},
            "keyed": {"command": "srv", "env": {"KEY": "${NOT_SET_ANYWHERE}"}},
            "bad.name": {"command": "srv"},
            "loose": {"command": "srv", "args": "--all"},
            "fine": {"type": "http", "url": "https://x.test/mcp", "headers": {"X": "${NOT_SET_ANYWHERE:-d}"}},
        },
    )
    _codex(mcp_env.work, "[mcp_servers\n")
    trust_project(mcp_env.work)
    warnings: list[str] = []
    settings = load_settings(mcp_env.work, on_warning=warnings.append)
    assert list(settings.mcp_servers) == ["fine"] and settings.mcp_servers["fine"].headers == {"X": "d"}
    reasons = {e.name: e.reason for e in settings.mcp_catalog.entries if e.state == "ignored"}
    assert reasons["events"] is not None and "transport 'sse' is not supported" in reasons["events"]
    assert (
        reasons["keyed"]
        == "${NOT_SET_ANYWHERE} is not set and has no default: set it, or write ${NOT_SET_ANYWHERE:-default}"
    )
    assert reasons["bad.name"] is not None and "is not a server name" in reasons["bad.name"]
    assert reasons["loose"] == "`args` must be a list of strings"
    [warning] = warnings
    assert "\n" not in warning and ".codex/config.toml: not valid TOML" in warning
    assert warning.endswith("; its MCP servers are not used")


def test_codexs_keys_map_to_corrals(mcp_env: McpEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PASSED_ON", "p")
    monkeypatch.setenv("API_TOKEN", "t")
    monkeypatch.delenv("NOT_SET_ANYWHERE", raising=False)
    mcp_env.settings({})
    _codex(
        mcp_env.work,
        "[mcp_servers.local]\n"
        'command = "srv"\nargs = ["-v"]\ncwd = "tools"\nenv = { OWN = "o" }\n'
        'env_vars = ["PASSED_ON", "NOT_SET_ANYWHERE"]\nstartup_timeout_ms = 2500\ntool_timeout_sec = 9\n'
        "[mcp_servers.remote]\n"
        'url = "https://r.test/mcp"\nhttp_headers = { X-One = "1" }\n'
        'env_http_headers = { X-Token = "API_TOKEN" }\nenabled = false\n'
        "[mcp_servers.tokenless]\n"
        'url = "https://r.test/mcp"\nbearer_token_env_var = "NOT_SET_ANYWHERE"\n',
    )
    trust_project(mcp_env.work)
    settings = load_settings(mcp_env.work)
    local = settings.mcp_servers["local"]
    assert local.cwd == str(mcp_env.work.resolve() / "tools")
    assert local.env == {"PASSED_ON": "p", "OWN": "o"}
    assert (local.startup_timeout_s, local.tool_timeout_s) == (2.5, 9.0)
    remote = settings.mcp_servers["remote"]
    assert remote.headers == {"X-One": "1", "X-Token": "t"} and not remote.enabled
    [tokenless] = [e for e in settings.mcp_catalog.entries if e.name == "tokenless"]
    assert tokenless.state == "ignored"
    assert tokenless.reason == "bearer_token_env_var 'NOT_SET_ANYWHERE' is not set in the environment; set it"


def test_an_untrusted_project_with_corral_settings_names_its_mcp_files_in_its_one_notice(
    mcp_env: McpEnv,
) -> None:
    mcp_env.settings({})
    (mcp_env.work / ".corral").mkdir()
    (mcp_env.work / ".corral" / "settings.toml").write_text('[mcp_servers.evil]\ncommand = "/tmp/evil"\n')
    _mcp_json(mcp_env.work, {"evil2": {"command": "/tmp/evil"}})
    warnings: list[str] = []
    settings = load_settings(mcp_env.work, on_warning=warnings.append)
    assert settings.mcp_servers == {}
    [notice] = warnings
    assert "mcp_servers.evil in" in notice and "the MCP servers of its .mcp.json" in notice
    assert (settings.mcp_catalog.untrusted or "").startswith(
        "the MCP servers of .corral/settings.toml, .mcp.json are ignored"
    )
