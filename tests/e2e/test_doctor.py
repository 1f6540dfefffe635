"""`corral doctor` as a real subprocess with private data and config roots.

Each test sets up one condition (a loose data root, a store from a newer corral,
no `bwrap` on PATH, a stray pane on the private tmux server, settings that warn
or fail) and checks the line the doctor prints for it and its exit code.
"""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from corral.agent.tools import ReadOnlySandbox
from corral.orchestration import SCHEMA_VERSION, Repositories
from tests.runtime._tmux_fixtures import kill_server, require_tmux

from .conftest import Env, RunCorral

NAMES = [
    "data_root",
    "store",
    "sandbox",
    "tmux",
    "tmux_workers",
    "agent_processes",
    "settings",
    "definitions",
    "skills",
    *["harness"] * 5,
]
"""Without a store (and with tmux on PATH); with a store, `checks` follows `store`. One `skills` line; one `harness` line per preset."""


def _private_home(env: Env) -> None:
    env.home.mkdir(mode=0o700)
    env.home.chmod(0o700)


def _report(corral: RunCorral, **kwargs: Any) -> tuple[int, dict[str, Any]]:
    done = corral("doctor", "--json", **kwargs)
    assert done.stderr == ""
    return done.returncode, json.loads(done.stdout)


def _check(report: dict[str, Any], name: str) -> dict[str, str]:
    found = [c for c in report["checks"] if c["name"] == name]
    assert len(found) == 1, report
    return found[0]


def test_text_output_is_one_line_per_check_and_a_summary(cli_env: Env, corral: RunCorral) -> None:
    _private_home(cli_env)

    done = corral("doctor")

    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    names = [line.split()[1].rstrip(":") for line in lines[:-1]]
    assert names == NAMES
    assert all(line.split()[0] in ("ok", "warn", "fail") for line in lines[:-1])
    assert lines[0] == f"ok    data_root: data root {cli_env.home} exists with mode 0700 (private to you)"
    assert re.fullmatch(r"\d+ ok, \d+ warn, 0 fail", lines[-1])


def test_json_output_is_one_object_with_every_check(cli_env: Env, corral: RunCorral) -> None:
    _private_home(cli_env)

    code, report = _report(corral)

    assert code == 0
    assert set(report) == {"checks", "ok"}
    assert report["ok"] is True
    assert [c["name"] for c in report["checks"]] == NAMES
    for check in report["checks"]:
        assert set(check) == {"name", "status", "message"}
        assert check["status"] in ("ok", "warn", "fail") and check["message"]


def test_sandbox_line_reflects_whether_the_sandbox_works_here(cli_env: Env, corral: RunCorral) -> None:
    works = asyncio.run(ReadOnlySandbox().probe()).ok

    _, report = _report(corral)

    sandbox = _check(report, "sandbox")
    if works:
        assert sandbox["status"] == "ok"
        assert (
            "read agents' bash runs confined" in sandbox["message"]
            and "no home, sockets or network" in sandbox["message"]
        )
    else:
        assert sandbox["status"] == "warn"
        assert "fall back to a read-only instruction" in sandbox["message"]


def test_without_bwrap_and_tmux_on_path_both_warn(cli_env: Env, corral: RunCorral, tmp_path: Path) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()

    code, report = _report(corral, env={"PATH": str(empty)})

    assert code == 0  # warnings only
    sandbox = _check(report, "sandbox")
    assert sandbox["status"] == "warn"
    assert "bwrap was not found on PATH" in sandbox["message"]
    assert "apt-get install bubblewrap" in sandbox["message"]
    assert "fall back to a read-only instruction only" in sandbox["message"]
    tmux = _check(report, "tmux")
    assert tmux["status"] == "warn" and "tmux runtime is unavailable" in tmux["message"]
    assert "tmux_workers" not in [c["name"] for c in report["checks"]]


def test_a_data_root_with_mode_0755_is_flagged_and_left_alone(cli_env: Env, corral: RunCorral) -> None:
    cli_env.home.mkdir()
    cli_env.home.chmod(0o755)

    code, report = _report(corral)

    assert code == 0
    root = _check(report, "data_root")
    assert root["status"] == "warn"
    assert "mode 0755" in root["message"] and f"chmod 700 {cli_env.home}" in root["message"]
    assert stat.S_IMODE(cli_env.home.stat().st_mode) == 0o755


def test_a_missing_data_root_warns_and_is_not_created(cli_env: Env, corral: RunCorral) -> None:
    code, report = _report(corral)

    assert code == 0
    assert _check(report, "data_root")["status"] == "warn"
    assert "does not exist yet" in _check(report, "data_root")["message"]
    assert not cli_env.home.exists()


def test_an_existing_store_reports_its_schema_version(cli_env: Env, corral: RunCorral) -> None:
    _private_home(cli_env)
    Repositories.open(cli_env.home / "corral.db").close()

    _, report = _report(corral)

    store = _check(report, "store")
    assert store["status"] == "ok"
    assert f"(schema version {SCHEMA_VERSION})" in store["message"]
    assert _check(report, "checks")["status"] == "ok"


def test_a_check_left_claimed_by_a_dead_process_warns_and_names_the_way_out(
    cli_env: Env, corral: RunCorral, tmp_path: Path
) -> None:
    from tests.orchestration.teams._check_helpers import add_member, dead_pid, stuck_check

    _private_home(cli_env)
    with Repositories.open(cli_env.home / "corral.db") as store:
        member = add_member(store, "fixer")
        store.kernel.record_started(member.run_id, pid=dead_pid())
        stuck_check(store, tmp_path, run_id=member.run_id, task=member.task_id, report=member.report_id)

    code, report = _report(corral)

    checks = _check(report, "checks")
    assert checks["status"] == "warn" and code == 0
    assert "unit of fixer" in checks["message"] and "corral checks resolve <id>" in checks["message"]


def test_a_store_from_a_newer_corral_fails_with_exit_1(cli_env: Env, corral: RunCorral) -> None:
    _private_home(cli_env)
    db = cli_env.home / "corral.db"
    Repositories.open(db).close()
    with sqlite3.connect(db) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 5:d}")
    conn.close()

    code, report = _report(corral)
    text = corral("doctor")

    assert code == 1 and report["ok"] is False
    store = _check(report, "store")
    assert store["status"] == "fail" and f"schema version {SCHEMA_VERSION + 5}" in store["message"]
    assert text.returncode == 1
    assert any(line.startswith("fail  store: ") for line in text.stdout.splitlines())


def test_an_orphan_pane_is_reported_not_killed(cli_env: Env, corral: RunCorral) -> None:
    require_tmux()
    socket = cli_env.home / "tmux" / "default"
    if len(str(socket)) > 100:
        pytest.skip("the temporary directory's path is too long for a tmux socket")
    (cli_env.home / "tmux").mkdir(parents=True, mode=0o700)
    cli_env.home.chmod(0o700)
    Repositories.open(cli_env.home / "corral.db").close()
    tmux = ["tmux", "-f", "/dev/null", "-S", str(socket)]
    try:
        subprocess.run(
            [*tmux, "new-session", "-d", "-s", "w", "-n", "stray", "sleep 60"], check=True, timeout=10
        )

        _, report = _report(corral)

        workers = _check(report, "tmux_workers")
        assert workers["status"] == "warn"
        assert "1 orphaned tmux worker pane(s)" in workers["message"] and "(unknown)" in workers["message"]
        assert "corral agents reap" in workers["message"]
        panes = subprocess.run(
            [*tmux, "list-panes", "-a", "-F", "#{window_name}"], capture_output=True, text=True, timeout=10
        )
        assert panes.stdout.split() == ["stray"]
    finally:
        kill_server(socket)


def test_no_tmux_server_means_no_orphans(cli_env: Env, corral: RunCorral) -> None:
    require_tmux()
    _private_home(cli_env)

    _, report = _report(corral)

    workers = _check(report, "tmux_workers")
    assert workers["status"] == "ok" and "no private tmux server" in workers["message"]


def test_settings_warnings_are_shown(cli_env: Env, corral: RunCorral) -> None:
    (cli_env.project / ".corral").mkdir()
    (cli_env.project / ".corral" / "settings.toml").write_text('shell_path = "/bin/sh"\n')

    code, report = _report(corral)

    assert code == 0
    settings = [c for c in report["checks"] if c["name"] == "settings"]
    assert [c["status"] for c in settings] == [
        "warn",
        "warn",
    ]  # an untrusted project's ignored key is no `ok`
    assert str(cli_env.project / ".corral" / "settings.toml") in settings[0]["message"]
    assert "is not trusted; ignoring shell_path" in settings[1]["message"]
    assert "corral trust --show" in settings[1]["message"]

    assert corral("trust").returncode == 0
    _, report = _report(corral)
    settings = [c for c in report["checks"] if c["name"] == "settings"]
    assert [c["status"] for c in settings] == ["ok"]


def test_unloadable_settings_fail_with_exit_1(cli_env: Env, corral: RunCorral) -> None:
    cli_env.settings("this is = = not toml\n")

    code, report = _report(corral)

    assert code == 1 and report["ok"] is False
    settings = _check(report, "settings")
    assert settings["status"] == "fail" and "not valid TOML" in settings["message"]


def test_favorite_models_with_an_unknown_tier_or_a_bad_model_warn_naming_the_fix(
    cli_env: Env, corral: RunCorral
) -> None:
    cli_env.settings('[favorite_models.fastest]\nmodel = "scripted/x"\n')
    code, report = _report(corral)
    assert code == 0
    settings = [c for c in report["checks"] if c["name"] == "settings"]
    assert [c["status"] for c in settings] == ["ok", "warn"], settings
    assert "'fastest' is not a tier" in settings[1]["message"]
    assert "read-collect" in settings[1]["message"] and "write-patch" in settings[1]["message"]

    cli_env.settings('[favorite_models.read-collect]\nmodel = "no-provider-here"\n')
    _, report = _report(corral)
    settings = [c for c in report["checks"] if c["name"] == "settings"]
    assert [c["status"] for c in settings] == ["ok", "warn"], settings
    assert settings[1]["message"].startswith("favorite_models.read-collect"), settings

    cli_env.settings(
        '[favorite_models.read-collect]\nmodel = "scripted/x"\n[favorite_models.reading-hard]\nmodel = "scripted/y"\n'
    )
    _, report = _report(corral)
    settings = [c for c in report["checks"] if c["name"] == "settings"]
    assert [c["status"] for c in settings] == ["ok", "ok"], settings
    assert "2 tier favorite(s) valid" in settings[1]["message"]


def test_a_bad_flag_is_one_line_and_exit_2(corral: RunCorral) -> None:
    done = corral("doctor", "--bogus")

    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.strip().splitlines() == ["corral: error: No such option: --bogus"]


def test_each_preset_harness_is_listed_with_its_version_or_its_install_command(
    cli_env: Env, corral: RunCorral, tmp_path: Path
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # An npm install of the Claude adapter: the `.bin` link resolves into the package.
    package = tmp_path / "node_modules" / "@agentclientprotocol" / "claude-agent-acp"
    (package / "dist").mkdir(parents=True)
    (package / "package.json").write_text(
        json.dumps({"name": "@agentclientprotocol/claude-agent-acp", "version": "0.99.1"})
    )
    (package / "dist" / "index.js").write_text("#!/bin/sh\n")
    (package / "dist" / "index.js").chmod(0o755)
    (bin_dir / "claude-agent-acp").symlink_to(package / "dist" / "index.js")
    # A native binary that says its version.
    goose = tmp_path / "goose-dist" / "goose"
    goose.parent.mkdir()
    goose.write_text("#!/bin/sh\necho ' 1.52.0'\n")
    goose.chmod(0o755)
    cli_env.settings(f'[harnesses.goose]\ncommand = ["{goose}", "acp"]\n')

    code, report = _report(corral, env={"PATH": f"{bin_dir}:/usr/bin:/bin"})

    assert code == 0
    lines = {c["message"].split(":")[0]: c for c in report["checks"] if c["name"] == "harness"}
    assert set(lines) == {"claude-code", "codex", "opencode", "gemini", "goose"}
    assert all(c["status"] == "ok" for c in lines.values())
    claude = lines["claude-code"]["message"]
    assert (
        "version 0.99.1" in claude and "tested with @agentclientprotocol/claude-agent-acp@0.101.0" in claude
    )
    assert f"{goose}, version 1.52.0" in lines["goose"]["message"]
    for name, install in (
        ("codex", "npm install -g @zed-industries/codex-acp@0.16.0"),
        ("opencode", "npm install -g opencode-ai@1.18.33"),
        ("gemini", "npm install -g @google/gemini-cli@0.61.0"),
    ):
        assert "not found" in lines[name]["message"] and install in lines[name]["message"]
