"""The Python API's isolation option and `Lead.merge` over a real git repository."""

from __future__ import annotations

import pytest

import corral
from corral.lead import LeadCallError
from tests.orchestration.teams._git_helpers import GIT_ENV, git, make_repo

from .conftest import WAIT, ApiEnv


@pytest.fixture(autouse=True)
def _repo(api_env: ApiEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    make_repo(api_env.work, {"app.py": "value = 1\n"})
    api_env.script(
        {
            "writer": [
                {"tool_calls": [{"name": "write", "args": {"path": "app.py", "content": "value = 2\n"}}]},
                {"text": "Set the value."},
            ]
        }
    )


async def test_open_lead_isolation_and_merge(api_env: ApiEnv) -> None:
    async with corral.open_lead(api_env.work, isolation="worktree") as lead:
        handle = await lead.delegate("implementer", "Set value to 2.", label="writer")
        result = await handle.result(timeout=WAIT)
        assert result.details["merge"] == "pending" and result.details["branch"].startswith("corral/writer-")
        assert (api_env.work / "app.py").read_text() == "value = 1\n"

        merged = lead.merge("writer")

        assert merged["ok"] and merged["outcome"] == "merged" and merged["kind"] == "fast-forward"
        assert (api_env.work / "app.py").read_text() == "value = 2\n"
        assert git(api_env.work, "branch", "--list", "corral/*") == ""
        with pytest.raises(LeadCallError) as caught:
            lead.merge("nobody")
        assert caught.value.category == "target_not_found"


async def test_without_the_option_writers_share_the_tree(api_env: ApiEnv) -> None:
    async with corral.open_lead(api_env.work) as lead:
        handle = await lead.delegate("implementer", "Set value to 2.", label="writer")
        result = await handle.result(timeout=WAIT)
        assert "branch" not in result.details
        assert (api_env.work / "app.py").read_text() == "value = 2\n"
