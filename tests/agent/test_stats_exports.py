"""Session statistics over the whole file, and the package's public names."""

from __future__ import annotations

import corral.agent
from corral.llm import Usage
from corral.settings import Settings

from .helpers import EchoTool, Harness, PlannedModel, Reply, wait


async def test_stats_cover_the_whole_file_including_compacted_history(harness: Harness) -> None:
    settings = Settings.model_validate({"compaction": {"keep_recent_tokens": 1}})
    model = PlannedModel([Reply(calls=[("echo", {"text": "x"})]), Reply("done")])
    agent, _ = harness.agent(model, tools=[EchoTool()], settings=settings)
    await wait(agent.prompt("go " * 50))
    model.plan = [Reply("summary", usage=Usage(input=7, output=3, total_tokens=10)), Reply("prefix")]
    await wait(agent.compact())
    stats = agent.stats()
    assert (stats.user_messages, stats.assistant_messages, stats.tool_calls, stats.tool_results) == (
        1,
        2,
        1,
        1,
    )
    assert stats.total_messages == 4
    # two replies of 100/10 plus the summary requests' usage
    assert stats.tokens.input >= 207 and stats.tokens.output >= 23
    assert stats.session_id == agent.session.session_id
    assert stats.session_file == str(agent.session.path)
    assert stats.context_usage is not None and stats.context_usage.tokens is None


def test_all_matches_the_public_names() -> None:
    public = {name for name in vars(corral.agent) if not name.startswith("_")}
    modules = {name for name, value in vars(corral.agent).items() if type(value).__name__ == "module"}
    # its order is ruff's (RUF022: constants, classes, functions), checked by `make lint`
    assert len(set(corral.agent.__all__)) == len(corral.agent.__all__)
    assert set(corral.agent.__all__) == public - modules - {"annotations"}
