"""Skills reach agents, lead to leaf, through the scripted model: the lead's system prompt describes
them, their instructions reach the model only through the `skill` tool, a delegated agent inherits
them, `skills: none` gets none, a list gets only those, and the choice crosses to a worker in the
launch description."""

from __future__ import annotations

from pathlib import Path

import pytest

from corral.lead import LaunchOptions, launch_session
from corral.orchestration.host.protocol import BuiltAgent, ManagedAgentSpec, WorkerLaunch
from corral.orchestration.surfaces import DelegateParams
from corral.skills import SKILL_TOOL_NAME, skill_names_of
from tests.orchestration._host_helpers import prepare_env, team, write_script

BODY = "SECRET-STEPS: run the linter twice."


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    prepare_env(tmp_path, monkeypatch)
    skills = tmp_path / "config" / "corral" / "skills"
    for name, description in (("lint", "Lint the code the house way."), ("pdf", "Read PDF files.")):
        (skills / name).mkdir(parents=True)
        (skills / name / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: {description}\n---\n{BODY if name == 'lint' else 'PDF steps.'}\n"
        )
    (skills / "lint" / "rules.md").write_text("rules\n")
    return tmp_path


def define(env: Path, name: str, fields: str) -> None:
    agents = env / "config" / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    (agents / f"{name}.md").write_text(
        f"---\nname: {name}\ndescription: d\ntools: [read]\n{fields}\n---\nWork.\n"
    )


async def test_the_lead_sees_descriptions_and_loads_a_body_only_through_the_tool(env: Path) -> None:
    write_script(
        env,
        "lead",
        {
            "steps": [
                {
                    "expect": {"tools_include": [SKILL_TOOL_NAME], "context_excludes": ["SECRET-STEPS"]},
                    "tool_calls": [{"name": "skill", "args": {"name": "lint"}}],
                },
                {
                    "expect": {
                        "context_contains": [
                            "SECRET-STEPS",
                            str(env / "config" / "corral" / "skills" / "lint" / "rules.md"),
                        ]
                    },
                    "text": "linted",
                },
            ]
        },
    )
    launched = launch_session(
        LaunchOptions(env / "work", model="scripted/lead", no_session=True, surfaces=[])
    )
    agent = launched.agent
    try:
        prompt = agent.system_prompt
        assert "# Skills" in prompt
        assert "- lint: Lint the code the house way." in prompt and "- pdf: Read PDF files." in prompt
        assert "SECRET-STEPS" not in prompt
        assert skill_names_of(agent) == ("lint", "pdf")
        await agent.prompt("lint it")
        assert agent.last_assistant_text() == "linted"
    finally:
        agent.session.close()


async def test_without_skills_the_lead_has_no_tool_and_no_section(env: Path) -> None:
    import shutil

    shutil.rmtree(env / "config" / "corral" / "skills")
    write_script(env, "lead", {"steps": [{"text": "hi"}]})
    launched = launch_session(
        LaunchOptions(env / "work", model="scripted/lead", no_session=True, surfaces=[])
    )
    try:
        assert "# Skills" not in launched.agent.system_prompt
        assert SKILL_TOOL_NAME not in [tool.name for tool in launched.agent.tools]
    finally:
        launched.agent.session.close()


@pytest.mark.parametrize(
    ("fields", "granted"),
    [("", ("lint", "pdf")), ("skills: none", ()), ("skills: [pdf, gone]", ("pdf",))],
    ids=["inherit", "none", "list"],
)
async def test_a_delegated_agent_gets_what_its_definition_says(
    env: Path, fields: str, granted: tuple[str, ...]
) -> None:
    define(env, "helper", fields)
    has_tool = {"tools_include": [SKILL_TOOL_NAME]} if granted else {"tools_exclude": [SKILL_TOOL_NAME]}
    agent_steps = [{"expect": has_tool, "text": "checked"}]
    if "lint" in granted:
        agent_steps = [
            {"expect": has_tool, "tool_calls": [{"name": "skill", "args": {"name": "lint"}}]},
            {"expect": {"context_contains": ["SECRET-STEPS"]}, "text": "checked"},
        ]
    write_script(
        env, "team", {"steps": [{"text": "ok"}], "on_exhausted": "repeat_last", "agents": {"*": agent_steps}}
    )
    async with team(env, "team") as t:
        result = await t.controller.delegate(t.caller, DelegateParams(definition="helper", task="go"))
        assert result.skills == granted
        details = result.to_details()
        assert details.get("skills", []) == list(granted)
        await t.quiet()
        [entry] = t.lead_entries("corral-agent-result")
        assert "status=completed" in entry["content"] and "checked" in entry["content"], entry["content"]


def test_the_skills_cross_to_a_worker_in_the_launch_description() -> None:
    spec = ManagedAgentSpec(
        label="helper",
        definition="helper",
        model_ref="scripted/x",
        thinking="off",
        tool_names=("read",),
        body="",
        system_prompt_mode="append",
        skills=("lint",),
    )
    built = BuiltAgent(model="scripted/x", thinking="off", system_prompt="p", tools=None, skills=("pdf",))
    for agent in (spec, built):
        back = WorkerLaunch.from_json(WorkerLaunch(agent).to_json())
        assert back.agent == agent
    old = WorkerLaunch(spec).to_json().replace(', "skills": ["lint"]', "")
    assert WorkerLaunch.from_json(old).agent.skills == ()  # type: ignore[union-attr]


async def test_a_nested_agent_never_gets_more_skills_than_its_parent(env: Path) -> None:
    define(env, "boss", "skills: [pdf]\nagents: [leaf]")
    define(env, "leaf", "skills: inherit")
    agents = {
        "boss": [
            {
                "tool_calls": [
                    {"name": "agent", "args": {"action": "delegate", "definition": "leaf", "task": "t"}}
                ]
            },
            {"text": "waiting for leaf"},
            {"text": "boss done"},
        ],
        "leaf": [
            {
                "expect": {"tools_include": [SKILL_TOOL_NAME]},
                "tool_calls": [{"name": "skill", "args": {"name": "lint"}}],
            },
            {"expect": {"context_contains": ["Your skills: pdf."]}, "text": "leaf has only pdf"},
        ],
    }
    write_script(env, "team", {"steps": [{"text": "ok"}], "on_exhausted": "repeat_last", "agents": agents})
    async with team(env, "team") as t:
        started = await t.controller.delegate(t.caller, DelegateParams(definition="boss", task="go"))
        assert started.skills == ("pdf",)
        await t.quiet()
        leaf = next(g for g in t.host.kernel.generations(include_finalized=True) if g.label == "leaf")
        assert leaf.session_path is not None
        assert "leaf has only pdf" in Path(leaf.session_path).read_text()


async def test_a_worker_builds_the_agent_with_the_skills_its_launch_names(env: Path) -> None:
    # What a tmux or Ray worker does with a launch (`build_launched_agent`): it finds the skills in the
    # agent's cwd itself and keeps the ones named, for a definition's spec and a built agent alike.
    from corral.llm import ModelRegistry
    from corral.orchestration.agents._delegation import build_launched_agent
    from corral.session import SessionManager
    from corral.settings import Settings

    write_script(env, "w", {"steps": [{"text": "hi"}]})
    registry = ModelRegistry(Settings(), cwd=env / "work")
    spec = ManagedAgentSpec(
        label="helper",
        definition="helper",
        model_ref="scripted/w",
        thinking="off",
        tool_names=("read",),
        body="",
        system_prompt_mode="append",
        skills=("lint", "gone"),
    )
    built = BuiltAgent(
        model="scripted/w", thinking="off", system_prompt="exact", tools=("read",), skills=("pdf",)
    )
    for described, names in ((spec, ("lint",)), (built, ("pdf",))):
        session = SessionManager.create(env / "work", sessions_root=env / "sessions")
        agent, _report = await build_launched_agent(
            described,
            session=session,
            registry=registry,
            settings=Settings(),
            cwd=env / "work",
            label="helper",
        )
        try:
            assert skill_names_of(agent) == names
            if described is spec:
                assert "- lint: Lint the code the house way." in agent.system_prompt
                assert "- pdf:" not in agent.system_prompt
            else:
                assert agent.system_prompt == "exact"
        finally:
            session.close()
