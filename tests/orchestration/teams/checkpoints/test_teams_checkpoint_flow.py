"""Checkpoints through the teams surface: a checkpointed report saves a record; continue_from starts a
fresh run whose prompt carries it as historical claims."""

from __future__ import annotations

from pathlib import Path

import pytest

from corral.orchestration.surfaces.teams import parse_spawn
from corral.orchestration.teams.reports._reports import TEAM_REPORT_TYPE
from corral.orchestration.teams.texts import CONTINUATION_PREAMBLE
from tests.orchestration.teams._git_helpers import make_repo
from tests.orchestration.teams._teams_helpers import session_entries, teams_env, write_script


@pytest.fixture(autouse=True)
def _env(env: Path) -> None:
    make_repo(env / "work", {"auth/token.py": "SECRET_CHECK = True\n", "config/app.toml": "x = 1\n"})


FINDING = {"id": "F1", "text": "tokens are checked", "evidence": ["auth/token.py:1"]}


async def test_a_checkpointed_report_is_saved_and_continued_as_a_fresh_run(tmp_path: Path) -> None:
    marker = "Current assignment (authoritative):"
    write_script(
        tmp_path,
        "lead",
        {
            "steps": [{"text": "x"}],
            "on_exhausted": "repeat_last",
            "agents": {
                "auth-review": [
                    {
                        "tool_calls": [
                            {
                                "name": "report_and_exit",
                                "args": {
                                    "content": "Auth reviewed.",
                                    "outcome": "succeeded",
                                    "findings": [FINDING],
                                },
                            }
                        ]
                    }
                ],
                "*": [
                    {
                        "expect": {
                            "last_user_contains": marker,
                            "context_contains": ["tokens are checked", "Recheck F1"],
                        },
                        "tool_calls": [{"name": "report_and_exit", "args": {"content": "F1 still holds."}}],
                    }
                ],
            },
        },
    )
    async with teams_env(tmp_path, "lead") as env:
        first = await env.teams.spawning.spawn(
            env.caller,
            parse_spawn(
                {
                    "name": "auth-review",
                    "prompt": "Review auth.",
                    "checkpoint": {"inputs": ["auth", "config"]},
                }
            ),
        )
        await env.quiet()
        [report] = env.lead_custom(TEAM_REPORT_TYPE)
        stored = env.host.repositories.teams.reports.team_report(report["details"]["report_id"])
        assert stored is not None
        checkpoint_id = stored.result.checkpoint_id
        record = env.teams.checkpoints.load(checkpoint_id)
        assert record.author.agent_name == "auth-review" and record.author.run_id == first.run_id
        assert [f.id for f in record.findings] == ["F1"]
        follow = await env.teams.spawning.spawn(
            env.caller,
            parse_spawn({"name": "auth-followup", "prompt": "Recheck F1.", "continue_from": checkpoint_id}),
        )
        assert follow.name.startswith("auth-followup-")
        await env.quiet()
        reports = env.lead_custom(TEAM_REPORT_TYPE)
        assert len(reports) == 2 and "F1 still holds." in reports[1]["content"]
        generation = env.host.kernel.get_generation(follow.run_id)
        assert generation is not None and generation.session_path is not None
        first_user = next(
            e
            for e in session_entries(Path(generation.session_path))
            if (e.get("message") or {}).get("role") == "user"
        )
        content = first_user["message"]["content"]
        text = content if isinstance(content, str) else content[0]["text"]
        assert text.rstrip().endswith("Recheck F1.")
        # the checkpoint the core read again at launch reaches the agent, in the continuation's words
        assert text.startswith(CONTINUATION_PREAMBLE) and "Source applicability:" in text
        assert checkpoint_id in text and "tokens are checked" in text
        env.teams.checkpoints.delete(checkpoint_id)
        with pytest.raises(Exception, match="deleted"):
            await env.teams.spawning.spawn(
                env.caller, parse_spawn({"prompt": "again", "continue_from": checkpoint_id})
            )


async def test_bad_checkpoint_policy_and_unknown_reference_fail_before_anything_starts(
    tmp_path: Path,
) -> None:
    write_script(tmp_path, "lead", {"steps": [{"text": "x"}]})
    async with teams_env(tmp_path, "lead") as env:
        with pytest.raises(Exception, match="Invalid checkpoint policy"):
            await env.teams.spawning.spawn(
                env.caller, parse_spawn({"prompt": "p", "checkpoint": {"inputs": ["/abs"]}})
            )
        with pytest.raises(Exception, match=r"[Cc]heckpoint"):
            await env.teams.spawning.spawn(
                env.caller, parse_spawn({"prompt": "p", "continue_from": "checkpoint:" + "0" * 64})
            )
        assert env.host.kernel.generations(include_finalized=True) == ()
