"""`corral mcp-servers list|check`, the doctor's `mcp_servers` line, and `corral run` calling an MCP
tool, through the real `corral` command."""

from __future__ import annotations

import json
import sys

from tests.mcp_servers.conftest import TINY

from .conftest import Env, RunCorral

SETTINGS = f"""
default_model = "scripted/mcp"

[mcp_servers.tiny]
command = "{sys.executable}"
args = ["{TINY}"]

[mcp_servers.broken]
command = "no-such-mcp-program"

[mcp_servers.web]
url = "http://127.0.0.1:9/mcp"
enabled = false
"""


def test_list_and_check_say_where_each_server_is_from_and_what_it_offers(
    cli_env: Env, corral: RunCorral
) -> None:
    cli_env.settings(SETTINGS)
    source = str(cli_env.config / "corral" / "settings.toml")
    listed = corral("mcp-servers", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = {row["name"]: row for row in json.loads(listed.stdout)["servers"]}
    assert rows["tiny"]["transport"] == "stdio" and rows["tiny"]["file"] == source
    assert rows["tiny"]["source"] == "user settings" and rows["tiny"]["state"] == "used"
    assert rows["web"] == {
        **rows["web"],
        "transport": "http",
        "enabled": False,
        "state": "disabled",
        "target": "http://127.0.0.1:9/mcp",
    }
    checked = corral("mcp-servers", "check")
    assert checked.returncode == 1, checked.stderr  # `broken` does not start
    assert "broken  failed: its command 'no-such-mcp-program' was not found on PATH" in checked.stdout
    assert "tiny  ready  (tiny 1.0, protocol " in checked.stdout
    assert "    mcp__tiny__note             Append a note" in checked.stdout
    one = corral("mcp-servers", "check", "tiny", "--json")
    assert one.returncode == 0, one.stderr
    [tiny] = json.loads(one.stdout)["servers"]
    assert (
        tiny["state"] == "ready"
        and {"name": "mcp__tiny__add", "readOnly": True}.items() <= tiny["tools"][0].items()
    )
    unknown = corral("mcp-servers", "check", "nope")
    assert unknown.returncode == 2 and "no MCP server named 'nope' (broken, tiny, web)" in unknown.stderr
    doctor = corral("doctor", "--json")
    [line] = [check for check in json.loads(doctor.stdout)["checks"] if check["name"] == "mcp_servers"]
    assert line["status"] == "warn" and "broken ('no-such-mcp-program' not found on PATH)" in line["message"]


def test_corral_run_calls_an_mcp_tool_and_names_a_server_that_failed(cli_env: Env, corral: RunCorral) -> None:
    cli_env.settings(SETTINGS)
    cli_env.script(
        "mcp",
        "steps:\n"
        "  - tool_calls: [{name: mcp__tiny__echo, args: {message: from the shell}}]\n"
        "  - {expect: {tools_ok: true}, text: 'said {{ last_tool_output }}'}\n",
    )
    run = corral("run", "-p", "go")
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "said Echo: from the shell"
    assert (
        "corral: warning: MCP server broken: failed to start: its command 'no-such-mcp-program'" in run.stderr
    )


def test_a_projects_mcp_json_starts_only_once_trusted(cli_env: Env, corral: RunCorral) -> None:
    marker = cli_env.project.parent / "started.txt"
    cli_env.settings('default_model = "scripted/mcp"\n')
    server = {"command": sys.executable, "args": [str(TINY)], "env": {"TINY_STARTED": str(marker)}}
    (cli_env.project / ".mcp.json").write_text(json.dumps({"mcpServers": {"proj": server}}))
    cli_env.script(
        "mcp",
        "steps:\n"
        "  - tool_calls: [{name: mcp__proj__echo, args: {message: from the project}}]\n"
        "  - {text: 'said {{ last_tool_output }}'}\n",
    )
    untrusted = corral("run", "-p", "go")
    assert "the MCP servers of its .mcp.json" in untrusted.stderr and "corral trust" in untrusted.stderr
    assert not marker.exists()
    listed = corral("mcp-servers", "list")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.startswith("the MCP servers of .mcp.json are ignored: the project ")
    trusted = corral("trust")
    assert trusted.returncode == 0 and "MCP server proj (.mcp.json): starts " in trusted.stdout
    run = corral("run", "-p", "go")
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "said Echo: from the project" and marker.exists()
    listed = corral("mcp-servers", "list")
    assert "proj  stdio  used  " in listed.stdout and "    from .mcp.json (" in listed.stdout
