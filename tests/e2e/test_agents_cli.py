"""`corral agents list|show|close` and `corral trust|untrust` as real subprocesses.

The store is seeded in this process through the public store API (a lead
session file plus generations it owns), then the real `corral` command reads
and acts on it through the Host/Controller.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path

from ._seed import lead_session, managed_agent
from .conftest import Env, RunCorral


def test_list_json_prints_the_list_action_records(cli_env: Env, corral: RunCorral) -> None:
    owner = lead_session(cli_env)
    managed_agent(cli_env, owner, "scout", lost=True)
    managed_agent(cli_env, "someone-else", "other")
    done = corral("agents", "list", "--json")
    assert done.returncode == 0, done.stderr
    records = json.loads(done.stdout)
    assert [r["agent"] for r in records] == ["scout"]
    [record] = records
    assert record["state"] == "lost"
    assert record["owner_session_id"] == owner
    assert record["agent_definition"] == "scout"
    assert record["managed"] is True
    assert "close" in record["available_actions"]

    text = corral("agents", "list")
    assert text.returncode == 0
    assert text.stdout.startswith("scout\tlost\tscout\t")


def test_list_with_no_agents_is_an_empty_array(cli_env: Env, corral: RunCorral) -> None:
    lead_session(cli_env)
    done = corral("agents", "list", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []


def test_list_without_a_session_is_one_line_error(cli_env: Env, corral: RunCorral) -> None:
    done = corral("agents", "list")
    assert done.returncode == 2
    assert done.stderr.startswith("corral: error: no session in")
    assert len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr


def test_session_option_selects_the_lead(cli_env: Env, corral: RunCorral) -> None:
    first = lead_session(cli_env)
    managed_agent(cli_env, first, "scout")
    lead_session(cli_env)  # a newer session without agents
    done = corral("agents", "list", "--json", "--session", first[:8])
    assert [r["agent"] for r in json.loads(done.stdout)] == ["scout"]


def test_show_prints_one_record_or_fails_cleanly(cli_env: Env, corral: RunCorral) -> None:
    owner = lead_session(cli_env)
    managed_agent(cli_env, owner, "scout")
    done = corral("agents", "show", "scout", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["agent"] == "scout"
    plain = corral("agents", "show", "scout")
    assert "agent: scout" in plain.stdout.splitlines()
    missing = corral("agents", "show", "nobody")
    assert missing.returncode == 2
    assert missing.stderr.startswith("corral: error: no agent nobody")


def test_close_removes_a_lost_agent(cli_env: Env, corral: RunCorral) -> None:
    owner = lead_session(cli_env)
    managed_agent(cli_env, owner, "scout", lost=True)
    done = corral("agents", "close", "scout", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "ok": True,
        "action": "close",
        "agent": "scout",
        "presentation_agent_definition": "scout",
    }
    assert json.loads(corral("agents", "list", "--json").stdout) == []


def test_close_of_an_unprovable_agent_fails_with_its_category_message(
    cli_env: Env, corral: RunCorral
) -> None:
    owner = lead_session(cli_env)
    managed_agent(cli_env, owner, "scout")  # never started by any host: presence cannot be proven
    done = corral("agents", "close", "scout")
    assert done.returncode == 2
    assert "cannot be closed safely" in done.stderr
    assert [r["agent"] for r in json.loads(corral("agents", "list", "--json").stdout)] == ["scout"]


def test_trust_and_untrust_a_project(cli_env: Env, corral: RunCorral) -> None:
    done = corral("trust")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == f"Trusted {cli_env.project.resolve()}"
    store = cli_env.config / "corral" / "trusted-projects.json"
    assert str(cli_env.project.resolve()) in json.loads(store.read_text())["projects"]
    assert stat.S_IMODE(store.stat().st_mode) == 0o600

    assert corral("untrust").stdout.startswith("No longer trusted:")
    assert json.loads(store.read_text())["projects"] == {}
    assert corral("untrust").stdout.startswith("Was not trusted:")


def test_trust_of_a_missing_directory_is_one_line_error(
    cli_env: Env, corral: RunCorral, tmp_path: Path
) -> None:
    done = corral("trust", str(tmp_path / "nope"))
    assert done.returncode == 2
    assert done.stderr.startswith("corral: error: Cannot trust")
