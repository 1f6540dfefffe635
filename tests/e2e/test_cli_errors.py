"""Bad input through the real command: one line on stderr, exit code 2, no traceback, nothing written."""

from __future__ import annotations

import pytest

from .conftest import Env, RunCorral


def assert_one_line_error(done, *needles: str) -> None:
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    for needle in needles:
        assert needle in lines[0]


def test_version(corral: RunCorral) -> None:
    done = corral("--version")
    assert done.returncode == 0
    assert done.stdout.startswith("corral ")


def test_bad_flag_is_one_line(corral: RunCorral) -> None:
    assert_one_line_error(corral("run", "--bogus"), "--bogus")


def test_bad_thinking_value(corral: RunCorral) -> None:
    assert_one_line_error(
        corral("run", "--thinking", "extreme", "-p", "x", "--model", "scripted/x"), "thinking"
    )


def test_unknown_model(corral: RunCorral, cli_env: Env) -> None:
    done = corral("run", "--model", "nosuch/model", "-p", "hi")
    assert_one_line_error(done, "nosuch/model")
    assert cli_env.sessions() == []


def test_missing_api_key_names_the_variable(corral: RunCorral, cli_env: Env) -> None:
    done = corral("run", "--model", "openai/gpt-5", "-p", "hi")
    assert_one_line_error(done, "OPENAI_API_KEY")
    assert cli_env.sessions() == []


def test_no_model_configured_says_what_to_set(corral: RunCorral) -> None:
    assert_one_line_error(corral("run", "-p", "hi"), "--model", "OPENAI_API_KEY")


def test_malformed_script_names_the_file(corral: RunCorral, cli_env: Env) -> None:
    cli_env.script("broken", "steps:\n  - {}\n")
    done = corral("run", "--model", "scripted/broken", "-p", "hi")
    assert_one_line_error(done, "broken.yaml")


def test_missing_script(corral: RunCorral) -> None:
    assert_one_line_error(corral("run", "--model", "scripted/absent", "-p", "hi"), "absent")


def test_session_path_that_does_not_exist_is_an_error(corral: RunCorral, cli_env: Env) -> None:
    cli_env.script("s", "steps:\n  - text: hi\n")
    done = corral("run", "--model", "scripted/s", "--session", str(cli_env.root / "nope.jsonl"), "-p", "hi")
    assert_one_line_error(done, "nope.jsonl")
    assert cli_env.sessions() == []


def test_unreadable_session_is_an_error(corral: RunCorral, cli_env: Env) -> None:
    bad = cli_env.root / "bad.jsonl"
    bad.write_text("this is not a session\n")
    cli_env.script("s", "steps:\n  - text: hi\n")
    assert_one_line_error(
        corral("run", "--model", "scripted/s", "--session", str(bad), "-p", "hi"), "bad.jsonl"
    )


@pytest.mark.parametrize(
    "args",
    [
        ("run", "--model", "scripted/s"),  # no prompt
        ("run", "--mode", "rpc", "-p", "x", "--model", "scripted/s"),
        ("run", "--continue", "--no-session", "-p", "x", "--model", "scripted/s"),
        ("run", "--tools", "read,teleport", "-p", "x", "--model", "scripted/s"),
        ("run", "--cwd", "/nonexistent/dir", "-p", "x", "--model", "scripted/s"),
    ],
)
def test_conflicting_or_missing_flags(corral: RunCorral, cli_env: Env, args: tuple[str, ...]) -> None:
    cli_env.script("s", "steps:\n  - text: hi\n")
    assert_one_line_error(corral(*args))


def test_malformed_settings_names_the_file(corral: RunCorral, cli_env: Env) -> None:
    cli_env.settings("default_model = [unclosed\n")
    assert_one_line_error(corral("run", "-p", "hi"), "settings.toml")


def test_a_bad_rate_limit_is_one_line_naming_the_key(corral: RunCorral, cli_env: Env) -> None:
    cli_env.settings("[providers.openai]\nmax_concurrent_requests = 0\n")
    assert_one_line_error(corral("run", "-p", "hi"), "providers.openai.max_concurrent_requests")


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("[budget]\ntree_tokens = 0\n", "budget.tree_tokens"),
        ('[budget]\nagent_cost_usd = "a dollar"\n', "budget.agent_cost_usd"),
        ("[budget]\ntree_tokenz = 5\n", "budget.tree_tokenz"),
        (
            "[teams.tier_budget.read-collect]\nagent_minutes = -1\n",
            "teams.tier_budget.read-collect.agent_minutes",
        ),
    ],
)
def test_bad_budget_setting_is_one_line(corral: RunCorral, cli_env: Env, text: str, key: str) -> None:
    cli_env.settings(text)
    assert_one_line_error(corral("run", "-p", "hi"), key)
