"""The launch pipeline (`host/_launch.py`): prepare stages, the record step, start, rollback.

delegate, continue, teams spawn and handoff go through it (their own tests cover each flow);
these tests drive `Launcher` directly with a feature's steps, to pin what the pipeline itself
promises: a prepare stage is undone on any later failure and kept on success, a failure after
the record step rolls the generation back (finalized, released, the feature's undo first,
`rollback_occurred` set), and an in-process start registers, equips and records the child.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from corral.agent import AgentSession
from corral.orchestration import InvalidRequestError
from corral.orchestration.host._launch import LaunchDraft, LaunchPlan, LaunchSteps, Recorded
from corral.orchestration.kernel._child import ManagedChild
from corral.orchestration.kernel.records import NewGeneration
from corral.session import SessionManager
from tests.orchestration._host_helpers import Team, team, write_script

LEAD = {"steps": [{"text": "noted"}], "on_exhausted": "repeat_last"}


class Stage:
    """A prepare stage that moves the cwd and records what happened to it."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        self.events: list[str] = []

    async def enter(self, draft: LaunchDraft) -> None:
        self.events.append("enter")
        draft.cwd = self.cwd

    async def undo(self) -> None:
        self.events.append("undo")


class Steps(LaunchSteps):
    """A feature's steps: a plain managed child of the lead, optionally failing at one step."""

    def __init__(self, t: Team, *, fail_at: str | None = None) -> None:
        self.t = t
        self.fail_at = fail_at
        self.events: list[str] = []
        self.recorded: Recorded | None = None

    def record(self, draft: LaunchDraft) -> Recorded:
        self.events.append(f"record {draft.cwd.name}")
        if self.fail_at == "record":
            raise InvalidRequestError("refused before anything was recorded")
        session = SessionManager.create(draft.cwd, sessions_root=self.t.sessions_root)
        generation, task = self.t.host.kernel.create_generation(
            NewGeneration(
                definition="scout",
                owner_session_id=self.t.caller.session_id,
                cwd=str(draft.cwd),
                session_id=session.session_id,
                task="look around",
                label="probe",
                session_path=None if session.path is None else str(session.path),
            )
        )
        self.recorded = Recorded(generation, task, session)
        return self.recorded

    async def build(self, recorded: Recorded) -> ManagedChild:
        self.events.append("build")
        if self.fail_at == "build":
            raise InvalidRequestError("the agent could not be built")
        host = self.t.host
        agent = AgentSession(
            session=recorded.session,
            model=self.t.lead.model,
            thinking_level="off",
            tools=[],
            cwd=Path(recorded.generation.cwd),
        )
        return ManagedChild(
            store=host.kernel, agent=agent, generation=recorded.generation, task=recorded.task, hooks=host
        )

    def attach(self, child: ManagedChild) -> None:
        self.events.append(f"attach {[tool.name for tool in child.agent.tools]}")

    def rolled_back(self, recorded: Recorded) -> None:
        self.events.append("rolled_back")


async def test_a_failed_build_rolls_the_generation_back_and_undoes_the_prepare_stages(env: Path) -> None:
    write_script(env, "lead", LEAD)
    elsewhere = env / "elsewhere"
    elsewhere.mkdir()
    async with team(env, "lead") as t:
        stage, steps = Stage(elsewhere), Steps(t, fail_at="build")
        with pytest.raises(InvalidRequestError) as caught:
            await t.host.launcher.launch(LaunchPlan("delegate", env / "work", stages=[stage]), steps)
        assert caught.value.rollback_occurred
        assert stage.events == ["enter", "undo"]
        assert steps.events == ["record elsewhere", "build", "rolled_back"]
        assert steps.recorded is not None
        run_id = steps.recorded.generation.run_id
        generation = t.host.kernel.get_generation(run_id)
        assert generation is None or generation.phase == "finalized"
        assert t.host.runs.child(run_id) is None and t.host.runs.runtime_handle(run_id) is None


async def test_a_refused_record_step_undoes_the_stages_and_records_nothing(env: Path) -> None:
    write_script(env, "lead", LEAD)
    async with team(env, "lead") as t:
        stage, steps = Stage(env / "work"), Steps(t, fail_at="record")
        with pytest.raises(InvalidRequestError) as caught:
            await t.host.launcher.launch(LaunchPlan("delegate", env / "work", stages=[stage]), steps)
        assert not caught.value.rollback_occurred  # nothing was recorded, nothing rolled back
        assert stage.events == ["enter", "undo"]
        assert steps.events == ["record work"]
        assert t.host.kernel.generations() == ()


async def test_an_in_process_launch_equips_starts_and_records_the_child(env: Path) -> None:
    write_script(env, "lead", LEAD)
    async with team(env, "lead") as t:
        stage, steps = Stage(env / "work"), Steps(t)
        generation = await t.host.launcher.launch(
            LaunchPlan("delegate", env / "work", stages=[stage], startup_s=20), steps
        )
        assert stage.events == ["enter"]  # kept: the launch succeeded
        # The host gave the child its own tools before `attach` and the start.
        assert steps.events == ["record work", "build", "attach ['ask_owner']"]
        assert generation.pid == t.host.pid and generation.host_id == t.host.host_id
        assert generation.pane_id == t.host.runs.runtime_handle(generation.run_id).runtime_id
        child = t.host.runs.child(generation.run_id)
        assert child.acknowledged.is_set()  # `startup_s` waited for the task's acknowledgement
        await t.quiet()
        stored = t.host.kernel.get_generation(generation.run_id)
        assert stored is not None and stored.phase == "finalized"
