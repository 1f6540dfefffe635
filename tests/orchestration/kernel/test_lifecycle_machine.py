"""A hypothesis state machine drives a real store through lifecycle events and checks the projection.

After every step, for the lead and for every delegating agent as controller,
`available_actions` must respect the contract's invariants (never
`delegate`/`continue`; unknown → nothing; only the direct owner gets actions;
`lost` → transcript/close at most; `reply` only with a pending ask; …), and the
store must keep its own invariants (one live generation per label, a result's
generation is completed, delivered results are never re-delivered).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from corral.orchestration import (
    AckCode,
    ControllerScope,
    NewGeneration,
    Observation,
    OrchestrationError,
    Repositories,
    RequestKind,
    project_agents,
)

LEAD = "lead-session"
ALLOWED = {"inspect", "transcript", "steer", "interrupt", "reply", "close"}
LIFECYCLES = st.sampled_from(["idle", "working", "blocked", "done", "unknown"])
PRESENCES = st.sampled_from(["live", "live", "live", "lost", "unknown"])


class LifecycleMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="corral-machine-"))
        self.store = Repositories.open(self.tmp / "corral.db")
        self.observations: dict[str, Observation] = {}
        # Generations nobody observed yet look live and busy, so most actions are in play.
        self.default = Observation(presence="live", lifecycle="working", transcript_ready=True)
        self.sessions = 0
        self.delivered: set[str] = set()

    def teardown(self) -> None:
        self.store.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    # --- helpers ---------------------------------------------------------------------------------

    def _live(self) -> list[str]:
        return [g.run_id for g in self.store.kernel.snapshot().generations]

    def _pick(self, data: st.DataObject) -> str | None:
        live = self._live()
        return data.draw(st.sampled_from(live)) if live else None

    def _try(self, call: object) -> None:
        try:
            call()  # type: ignore[operator]
        except OrchestrationError:
            pass  # refused mutations are part of the exploration; the invariants check the rest

    # --- rules -----------------------------------------------------------------------------------

    @rule(delegating=st.booleans(), data=st.data())
    def delegate(self, delegating: bool, data: st.DataObject) -> None:
        self.sessions += 1
        parents = [
            g for g in self.store.kernel.snapshot().generations if g.delegating and g.presence == "live"
        ]
        use_parent = bool(parents) and data.draw(st.booleans())
        parent = data.draw(st.sampled_from(parents)) if use_parent else None
        new = NewGeneration(
            definition="worker",
            owner_session_id=LEAD if parent is None else parent.session_id,
            cwd="/p",
            session_id=f"s{self.sessions}",
            task="work",
            parent_run_id=None if parent is None else parent.run_id,
            delegating=delegating and parent is None,
        )
        try:
            generation, task = self.store.kernel.create_generation(new)
        except OrchestrationError:
            return
        if data.draw(st.booleans()):
            self.store.kernel.record_ack(generation.run_id, task.request_id, accepted=True)

    @rule(data=st.data())
    def delegate_tree(self, data: st.DataObject) -> None:
        """Start a delegating agent with an accepted task, then a leaf under it (trees are the hard case)."""
        self.sessions += 2
        parent_session, child_session = f"p{self.sessions}", f"c{self.sessions}"
        try:
            parent, task = self.store.kernel.create_generation(
                NewGeneration("planner", LEAD, "/p", parent_session, "plan", delegating=True)
            )
            self.store.kernel.record_ack(parent.run_id, task.request_id, accepted=True)
            child, child_task = self.store.kernel.create_generation(
                NewGeneration(
                    "worker", parent_session, "/p", child_session, "work", parent_run_id=parent.run_id
                )
            )
        except OrchestrationError:
            return
        if data.draw(st.booleans()):
            self.store.kernel.record_ack(child.run_id, child_task.request_id, accepted=True)

    @rule(data=st.data(), accepted=st.booleans())
    def ack_pending_request(self, data: st.DataObject, accepted: bool) -> None:
        run_id = self._pick(data)
        if run_id is None:
            return
        request = self.store.kernel.unacknowledged_request(run_id)
        if request is not None:
            code: AckCode | None = None if accepted else "busy"
            self._try(
                lambda: self.store.kernel.record_ack(run_id, request.request_id, accepted=accepted, code=code)
            )

    @rule(data=st.data(), kind=st.sampled_from(["steer", "interrupt"]))
    def control(self, data: st.DataObject, kind: RequestKind) -> None:
        run_id = self._pick(data)
        if run_id is not None:
            g = self.store.kernel.get_generation(run_id)
            assert g is not None
            self._try(
                lambda: self.store.kernel.submit_request(
                    run_id, owner_session_id=g.owner_session_id, kind=kind, text="x"
                )
            )

    @rule(data=st.data())
    def ask(self, data: st.DataObject) -> None:
        run_id = self._pick(data)
        g = None if run_id is None else self.store.kernel.get_generation(run_id)
        if g is not None and g.active_request_id is not None:
            request_id = g.active_request_id
            self._try(lambda: self.store.kernel.create_ask(g.run_id, request_id=request_id, question="?"))

    @rule(data=st.data())
    def reply(self, data: st.DataObject) -> None:
        run_id = self._pick(data)
        ask = None if run_id is None else self.store.kernel.pending_ask(run_id)
        g = None if run_id is None else self.store.kernel.get_generation(run_id)
        if ask is not None and g is not None:
            self._try(
                lambda: self.store.kernel.answer_ask(
                    g.run_id, owner_session_id=g.owner_session_id, ask_id=ask.ask_id, text="y"
                )
            )

    @rule(data=st.data(), ok=st.booleans())
    def finish(self, data: st.DataObject, ok: bool) -> None:
        run_id = self._pick(data)
        g = None if run_id is None else self.store.kernel.get_generation(run_id)
        if g is None or g.active_request_id is None:
            return
        request_id = g.active_request_id
        if ok:
            self._try(
                lambda: self.store.kernel.store_result(g.run_id, request_id, status="completed", text="done")
            )
        else:
            self._try(
                lambda: self.store.kernel.record_result_error(g.run_id, request_id, message="disk full")
            )

    @rule()
    def deliver_all(self) -> None:
        owners = {g.owner_session_id for g in self.store.kernel.snapshot().generations}
        for owner in owners:
            for result in self.store.kernel.undelivered_results(owner):
                assert result.request_id not in self.delivered
                assert self.store.kernel.mark_delivered(
                    result.request_id, owner_session_id=owner, entry_id="e"
                )
                assert not self.store.kernel.mark_delivered(
                    result.request_id, owner_session_id=owner, entry_id="e2"
                )
                self.delivered.add(result.request_id)

    @rule(data=st.data())
    def close(self, data: st.DataObject) -> None:
        run_id = self._pick(data)
        g = None if run_id is None else self.store.kernel.get_generation(run_id)
        if g is not None:
            self._try(
                lambda: self.store.kernel.finalize_generation(g.run_id, owner_session_id=g.owner_session_id)
            )

    @rule(data=st.data(), presence=st.sampled_from(["lost", "unknown", "live"]))
    def record_presence(self, data: st.DataObject, presence: str) -> None:
        run_id = self._pick(data)
        if run_id is not None:
            self._try(lambda: self.store.kernel.mark_presence(run_id, presence))  # type: ignore[arg-type]

    @rule(data=st.data(), presence=PRESENCES, lifecycle=LIFECYCLES, ready=st.booleans())
    def observe(self, data: st.DataObject, presence: str, lifecycle: str, ready: bool) -> None:
        run_id = self._pick(data)
        if run_id is not None:
            self.observations[run_id] = Observation(
                presence=presence,  # type: ignore[arg-type]
                lifecycle=lifecycle,  # type: ignore[arg-type]
                transcript_ready=ready,
            )

    # --- invariants ------------------------------------------------------------------------------

    @invariant()
    def projection_respects_the_contract(self) -> None:
        snapshot = self.store.kernel.snapshot()
        asks = {a.run_id for a in snapshot.pending_asks}
        undelivered = {r.run_id for r in snapshot.undelivered}
        controllers = [ControllerScope(LEAD)] + [
            ControllerScope(g.session_id, kind="managed-agent") for g in snapshot.generations if g.delegating
        ]
        observations = {g.run_id: self.observations.get(g.run_id, self.default) for g in snapshot.generations}
        for controller in controllers:
            for view in project_agents(snapshot, observations, controller, now_ms=snapshot.taken_at):
                actions = set(view.available_actions)
                g = view.generation
                obs = observations[g.run_id]
                assert actions <= ALLOWED
                assert view.state in {"working", "blocked", "settling", "unknown", "lost"}
                if not view.direct:
                    assert actions == set(), "only the direct owner acts"
                else:
                    assert g.owner_session_id == controller.session_id
                if view.presence == "unknown":
                    assert actions == set()
                if view.presence == "lost":
                    assert actions <= {"transcript", "close"}
                if controller.kind == "managed-agent":
                    assert view.direct, "a delegating agent sees direct children only"
                assert ("inspect" in actions) <= (view.presence == "live")
                assert ("transcript" in actions) <= obs.transcript_ready
                assert ("reply" in actions) <= (g.run_id in asks)
                assert ("interrupt" in actions) <= (view.state == "working" and g.run_id not in asks)
                assert ("steer" in actions) <= (view.state in {"working", "blocked"} and g.run_id not in asks)
                assert ("close" in actions) <= (g.run_id not in undelivered)
                if g.run_id in undelivered or (g.result_error is not None and view.presence == "live"):
                    assert view.state == "settling"
                elif g.result_error is not None:  # no host to settle it: never shown settling
                    assert view.state == view.presence
                if view.stale:
                    assert view.state == "working" and view.inactive_ms is not None

    @invariant()
    def store_keeps_its_invariants(self) -> None:
        snapshot = self.store.kernel.snapshot()
        labels = [g.label for g in snapshot.generations]
        assert len(labels) == len(set(labels))
        for result in snapshot.undelivered:
            g = self.store.kernel.get_generation(result.run_id)
            assert g is not None and g.phase == "completed" and g.completed_request_id == result.request_id
        for g in snapshot.generations:
            if g.parent_run_id is not None:
                parent = self.store.kernel.get_generation(g.parent_run_id)
                assert parent is not None and parent.live, "parents outlive their children"
                assert not g.delegating, "agent-started agents are leaves"


LifecycleMachine.TestCase.settings = settings(
    max_examples=40,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestLifecycleMachine = LifecycleMachine.TestCase
