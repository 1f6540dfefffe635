"""Managed agents on the tmux runtime: real `corral worker` processes in a private tmux server."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from corral._tmux.orphans import find_orphans, reap_orphans
from corral.lead._host import ComposedHost
from corral.llm import ModelRegistry
from corral.orchestration import (
    ASK_TYPE,
    RESULT_TYPE,
    ManagedAgentBusyError,
    PaneNotReadyError,
    Repositories,
    load_roster,
)
from corral.orchestration.host._worker import worker_env
from corral.orchestration.surfaces import (
    CloseParams,
    DelegateParams,
    InspectParams,
    InterruptParams,
    ListParams,
    ReplyParams,
    SteerParams,
)
from corral.runtime import LaunchSpec, TmuxRuntime
from corral.settings import Settings
from tests._waits import eventually
from tests.orchestration._host_helpers import (
    STARTUP_WAIT,
    WAIT,
    Team,
    make_lead,
    prepare_env,
    team,
    write_script,
)
from tests.runtime._tmux_fixtures import tmux_socket

__all__ = ["tmux_socket"]

LEAD = {"steps": [{"text": "noted"}], "on_exhausted": "repeat_last"}
TMUX = Settings(runtime="tmux")


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    prepare_env(tmp_path, monkeypatch)
    yield tmp_path
    (tmp_path / "work" / "go").touch()  # a failed test's closed gate opens: no gated `bash` outlives it


def _host(env: Path, socket: Path) -> ComposedHost:
    return ComposedHost(
        repositories=Repositories.open(env / "home" / "corral.db"),
        registry=ModelRegistry(Settings(), cwd=env / "work"),
        settings=TMUX,
        sessions_root=env / "sessions",
        roster_loader=lambda cwd: load_roster(cwd, user_dir=env / "config" / "agents", trust=False),
        tmux_socket=socket,
    )


def _panes(socket: Path) -> list[str]:
    out = subprocess.run(
        ["tmux", "-S", str(socket), "list-panes", "-a", "-F", "#{pane_id} #{pane_title}"],
        capture_output=True,
        text=True,
        check=False,
        timeout=10,
    ).stdout
    return out.splitlines()


def _screen(socket: Path, pane_id: str) -> str:
    return subprocess.run(
        ["tmux", "-S", str(socket), "capture-pane", "-p", "-J", "-t", pane_id],
        capture_output=True,
        text=True,
        check=False,
        timeout=10,
    ).stdout.strip()


async def test_delegate_runs_in_a_pane_and_the_result_is_delivered_once(env: Path, tmux_socket: Path) -> None:
    write_script(env, "team", {**LEAD, "agents": {"*": [{"text": "Found 3 files."}]}})
    async with team(env, "team", settings=TMUX, tmux_socket=tmux_socket) as t:
        started = await t.controller.delegate(t.caller, DelegateParams(definition="scout", task="Look"))
        generation = t.host.kernel.get_generation(started.run_id)
        assert generation is not None and generation.runtime_kind == "tmux"
        assert generation.pane_id is not None and generation.pane_id.startswith("%")
        assert generation.pid is not None  # the worker's readiness record
        await t.quiet()
        results = t.lead_entries(RESULT_TYPE)
        assert len(results) == 1 and "Found 3 files." in results[0]["content"]
        try:
            await eventually(
                lambda: not any(p.startswith(f"{generation.pane_id} ") for p in _panes(tmux_socket))
            )
        except TimeoutError:
            pytest.fail(
                f"the worker did not exit after finalization:\n{_screen(tmux_socket, generation.pane_id)}"
            )
        final = t.host.kernel.get_generation(started.run_id)
        assert final is None or final.phase == "finalized"


async def test_ask_reply_steer_and_interrupt_go_through_the_store(env: Path, tmux_socket: Path) -> None:
    agent = [
        {"tool_calls": [{"name": "ask_owner", "args": {"question": "Option A or B?"}}]},
        {"text": "working on B", "delay_ms": 60000},
        {"text": "Switched to C.", "expect": {"last_user_contains": "Owner interrupt"}},
    ]
    write_script(env, "team", {**LEAD, "agents": {"*": agent}})
    async with team(env, "team", settings=TMUX, tmux_socket=tmux_socket) as t:
        started = await t.controller.delegate(t.caller, DelegateParams(definition="scout", task="Decide"))
        await t.quiet()  # blocked on its question, which was delivered to the lead
        asks = t.lead_entries(ASK_TYPE)
        assert len(asks) == 1 and "Option A or B?" in asks[0]["content"]
        with pytest.raises(ManagedAgentBusyError):
            await t.controller.steer(t.caller, SteerParams(agent="scout", message="hurry"))
        replied = await t.controller.reply(t.caller, ReplyParams(agent="scout", message="Use B."))
        assert replied.to_details()["assignment_request_id"] == started.request_id
        steered = await t.controller.steer(t.caller, SteerParams(agent="scout", message="also log it"))
        request = t.host.kernel.get_request(steered.request_id)
        assert request is not None and request.accepted is True
        await t.controller.interrupt(t.caller, InterruptParams(agent="scout", message="Do C instead."))
        await t.quiet()
        results = t.lead_entries(RESULT_TYPE)
        assert len(results) == 1 and "Switched to C." in results[0]["content"]


async def test_inspect_reads_the_pane_and_close_kills_it(env: Path, tmux_socket: Path) -> None:
    write_script(env, "team", {**LEAD, "agents": {"*": [{"text": "slow", "delay_ms": 60000}]}})
    async with team(env, "team", settings=TMUX, tmux_socket=tmux_socket) as t:
        started = await t.controller.delegate(t.caller, DelegateParams(definition="scout", task="Wait"))
        generation = t.host.kernel.get_generation(started.run_id)
        assert generation is not None and generation.pid is not None
        listed = (await t.controller.list(t.caller, ListParams())).to_details()["agents"][0]
        assert listed["state"] == "working" and "inspect" in listed["available_actions"]
        inspected = (await t.controller.inspect(t.caller, InspectParams(agent="scout"))).to_details()
        assert "scout" in inspected["recent_output"]  # the worker's state line
        assert inspected["process"][0]["pid"] == generation.pid
        assert inspected["pane_id"] == generation.pane_id
        closed = await t.controller.close(t.caller, CloseParams(agent="scout"))
        assert closed.closed == ("scout",) and "cleanup_error" not in closed.to_details()
        assert not any(p.startswith(f"{generation.pane_id} ") for p in _panes(tmux_socket))
        assert t.host.kernel.get_generation(started.run_id) is None or (
            t.host.kernel.get_generation(started.run_id).phase == "finalized"  # type: ignore[union-attr]
        )


async def test_a_worker_that_cannot_start_fails_pane_not_ready_with_its_diagnostic(
    env: Path, tmux_socket: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_script(env, "unbundled-team", {**LEAD, "agents": {"*": [{"text": "never"}]}})
    empty = env / "no-scripts"
    empty.mkdir()
    # The worker (only) looks for scripts in an empty directory: it cannot load its model (a name no
    # bundled script has, so the bundled scripts cannot stand in).
    monkeypatch.setattr(
        "corral.orchestration.host._launch.worker_env",
        lambda: {**worker_env(), "CORRAL_SCRIPTS": str(empty)},
    )
    async with team(env, "unbundled-team", settings=TMUX, tmux_socket=tmux_socket) as t:
        with pytest.raises(PaneNotReadyError) as caught:
            await t.controller.delegate(
                t.caller, DelegateParams(definition="scout", task="x", timeout_ms=20000)
            )
        error = caught.value
        assert error.rollback_occurred
        assert "unbundled-team" in error.details["startupDiagnostic"]
        assert "Error" in error.details["startupDiagnostic"]
        assert _panes(tmux_socket) == []
        assert t.host.kernel.generation_by_label("scout") is None


async def test_host_sigkill_agents_keep_working_and_the_resumed_host_delivers_once(
    env: Path, tmux_socket: Path
) -> None:
    # "fast" finishes only once the test opens its gate, after the host is dead: the order is explicit.
    gate = _builder_definition(env)
    agents = {
        "fast": [
            {"tool_calls": [{"name": "bash", "args": {"command": _gate_command(gate)}}]},
            {"text": "fast result"},
        ],
        "slow": [{"text": "slow", "delay_ms": 60000}],
    }
    write_script(env, "team", {**LEAD, "agents": agents})
    driver = Path(__file__).parents[2] / "runtime" / "tmux_host_driver.py"
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(driver),
        str(env),
        str(tmux_socket),
        "--definition",
        "builder",
        "fast",
        "slow",
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        line = await asyncio.wait_for(process.stdout.readline(), STARTUP_WAIT)
        assert line.strip() == b"started"
    finally:
        process.kill()  # SIGKILL: the host dies without cleanup
        await process.wait()
    store = Repositories.open(env / "home" / "corral.db")
    try:
        fast = store.kernel.generation_by_label("fast")
        assert fast is not None and fast.phase != "completed"  # still held at its gate
        gate.touch()

        # With no host at all, the fast agent finishes and stores its result durably.
        def fast_completed() -> bool:
            generation = store.kernel.generation_by_label("fast")
            return generation is not None and generation.phase == "completed"

        await eventually(fast_completed, timeout=STARTUP_WAIT)  # its worker may still be starting
    finally:
        store.close()
    assert len(_panes(tmux_socket)) == 2  # both workers outlived their host
    lead_path = Path((env / "lead.txt").read_text())
    host = _host(env, tmux_socket)
    lead = make_lead(env, "team", sessions_root=env / "sessions", session_path=lead_path)
    try:
        caller = await host.attach_lead(lead, surfaces=())
        team_ = Team(host, lead, caller, env, env / "sessions")
        await eventually(lambda: len(team_.lead_entries(RESULT_TYPE)) == 1, host)
        await host.runtime.tmux.refresh()  # presence comes from the latest pane inventory
        listed = (await host.controller.list(caller, ListParams())).to_details()["agents"]
        assert [a["agent"] for a in listed] == ["slow"]
        assert listed[0]["state"] == "working" and "steer" in listed[0]["available_actions"]
        steered = await host.controller.steer(caller, SteerParams(agent="slow", message="keep going"))
        request = host.kernel.get_request(steered.request_id)
        assert request is not None and request.accepted is True
        await host.controller.close(caller, CloseParams(agent="slow"))
        await eventually(lambda: _panes(tmux_socket) == [])
        results = team_.lead_entries(RESULT_TYPE)
        assert len(results) == 1 and "fast result" in results[0]["content"]
    finally:
        await host.aclose()
        lead.session.close()


async def test_orphan_panes_are_reported_and_reaped_but_live_agents_are_not(
    env: Path, tmux_socket: Path
) -> None:
    write_script(env, "team", {**LEAD, "agents": {"*": [{"text": "slow", "delay_ms": 60000}]}})
    async with team(env, "team", settings=TMUX, tmux_socket=tmux_socket) as t:
        started = await t.controller.delegate(t.caller, DelegateParams(definition="scout", task="Wait"))
        tmux = t.host.runtime.tmux
        stray = await tmux.start(LaunchSpec("not-a-run", "stray", env / "work", "sid", argv=("sleep", "60")))
        orphans = await find_orphans(t.host.kernel, tmux)
        assert orphans is not None
        assert [(o.pane.pane_id, o.reason, o.pane.title) for o in orphans] == [
            (stray.runtime_id, "unknown", "stray")
        ]
        reaped, errors = await reap_orphans(t.host.kernel, tmux)
        assert [o.pane.pane_id for o in reaped] == [stray.runtime_id] and errors == {}
        generation = t.host.kernel.get_generation(started.run_id)
        assert generation is not None
        assert [p.split()[0] for p in _panes(tmux_socket)] == [generation.pane_id]
        assert await find_orphans(t.host.kernel, tmux) == []


async def test_a_killed_worker_is_lost_and_its_dead_pane_is_closed(env: Path, tmux_socket: Path) -> None:
    write_script(env, "team", {**LEAD, "agents": {"*": [{"text": "slow", "delay_ms": 60000}]}})
    async with team(env, "team", settings=TMUX, tmux_socket=tmux_socket) as t:
        started = await t.controller.delegate(t.caller, DelegateParams(definition="scout", task="Wait"))
        generation = t.host.kernel.get_generation(started.run_id)
        assert generation is not None and generation.pid is not None
        os.kill(generation.pid, signal.SIGKILL)

        def lost() -> bool:
            current = t.host.kernel.get_generation(started.run_id)
            return current is not None and current.presence == "lost"

        await eventually(lost, t.host)
        record = (await t.controller.list(t.caller, ListParams())).to_details()["agents"][0]
        assert record["state"] == "lost" and "steer" not in record["available_actions"]
        await t.quiet()  # a lost agent no longer keeps its owner busy
        await t.controller.close(t.caller, CloseParams(agent="scout"))
        assert _panes(tmux_socket) == []


async def _run_driver_until_killed(env: Path, socket: Path, fault: str, *args: str) -> Path:
    """Run the host driver with `CORRAL_FAULTS=fault`; it must die by SIGKILL there. The lead's path."""
    driver = Path(__file__).parents[2] / "runtime" / "tmux_host_driver.py"
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(driver),
        str(env),
        str(socket),
        *args,
        stdout=asyncio.subprocess.PIPE,
        env={**os.environ, "CORRAL_FAULTS": fault},
    )
    try:
        out, _ = await asyncio.wait_for(process.communicate(), WAIT)
    finally:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
    assert process.returncode == -signal.SIGKILL, out
    return Path((env / "lead.txt").read_text())


def _builder_definition(env: Path) -> Path:
    """Write a user-defined `builder` (bash, no delegation); return the gate file its commands wait on."""
    agents = env / "config" / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    (agents / "builder.md").write_text(
        "---\nname: builder\ndescription: Runs commands.\ntools: [read, bash]\n---\nRun what you are asked.\n"
    )
    return env / "work" / "go"


def _gate_command(gate: Path) -> str:
    """A shell command that returns once the test creates `gate`."""
    return f"while [ ! -e {gate} ]; do sleep 0.01; done"


def _gated_builder(env: Path) -> dict[str, object]:
    """A `builder` that works, runs a gated command, then answers."""
    command = _gate_command(_builder_definition(env))
    return {
        **LEAD,
        "agents": {
            "*": [
                {"text": "working", "delay_ms": 60000},
                {"tool_calls": [{"name": "bash", "args": {"command": command}}]},
                {"text": "Finished in the pane."},
            ]
        },
    }


async def test_a_host_killed_between_handoff_transfer_and_pane_start_leaves_a_lost_closable_agent(
    env: Path, tmux_socket: Path
) -> None:
    write_script(env, "team", {**LEAD, "agents": {"*": [{"text": "working", "delay_ms": 60000}]}})
    lead_path = await _run_driver_until_killed(
        env, tmux_socket, "after_runtime_transfer", "--handoff", "scout"
    )
    store = Repositories.open(env / "home" / "corral.db")
    try:
        stuck = store.kernel.generation_by_label("scout")
        assert stuck is not None and stuck.runtime_kind == "tmux" and stuck.pane_id is None
        assert stuck.presence != "lost"  # what the dead host left: neither running nor settled
    finally:
        store.close()
    async with team(env, "team", settings=TMUX, tmux_socket=tmux_socket, session_path=lead_path) as t:
        generation = t.host.kernel.generation_by_label("scout")
        assert generation is not None and generation.presence == "lost"
        assert generation.diagnostic is not None and "no pane runs its worker" in generation.diagnostic
        listed = (await t.controller.list(t.caller, ListParams())).to_details()["agents"]
        assert [(a["agent"], a["state"]) for a in listed] == [("scout", "lost")]
        await t.quiet()  # a lost agent keeps nobody waiting
        await t.controller.close(t.caller, CloseParams(agent="scout"))
        assert t.host.kernel.generation_by_label("scout") is None
        assert _panes(tmux_socket) == []
        assert t.lead_entries(RESULT_TYPE) == []


@pytest.mark.parametrize("handoff", [True, False], ids=["handoff", "tmux-start"])
async def test_a_worker_whose_pane_was_never_recorded_is_adopted_by_the_next_host_and_delivers_once(
    env: Path, tmux_socket: Path, handoff: bool
) -> None:
    write_script(env, "team", _gated_builder(env))
    if not handoff:  # a fresh tmux start has no slow in-process call to move out of
        script = _gated_builder(env)
        script["agents"]["*"] = script["agents"]["*"][1:]  # type: ignore[index]
        write_script(env, "team", script)
    flags = ("--handoff",) if handoff else ()
    lead_path = await _run_driver_until_killed(
        env, tmux_socket, "before_pane_recorded", *flags, "--definition", "builder", "builder"
    )
    store = Repositories.open(env / "home" / "corral.db")
    try:  # before any host adopts it, its worker is no orphan: reaping must not kill it
        assert await find_orphans(store.kernel, TmuxRuntime(socket=tmux_socket)) == []
    finally:
        store.close()
    async with team(env, "team", settings=TMUX, tmux_socket=tmux_socket, session_path=lead_path) as t:
        generation = t.host.kernel.generation_by_label("builder")
        assert generation is not None and generation.presence != "lost"
        assert generation.pane_id is not None and generation.host_id == t.host.host_id
        assert t.host.runs.on_worker(generation.run_id)
        assert [p.split()[0] for p in _panes(tmux_socket)] == [generation.pane_id]
        (env / "work" / "go").touch()
        await t.quiet()
        results = t.lead_entries(RESULT_TYPE)
        assert len(results) == 1 and "Finished in the pane." in results[0]["content"]
        await eventually(lambda: _panes(tmux_socket) == [])  # the worker exited once finalized


async def test_an_unrecorded_pane_is_left_alone_with_a_warning_when_tmux_cannot_list_panes(
    env: Path, tmux_socket: Path
) -> None:
    write_script(env, "team", {**LEAD, "agents": {"*": [{"text": "working", "delay_ms": 60000}]}})
    lead_path = await _run_driver_until_killed(
        env, tmux_socket, "after_runtime_transfer", "--handoff", "scout"
    )
    host = _host(env, tmux_socket)
    host.runtime.tmux.tmux = "corral-no-such-tmux"  # the inventory fails: nothing is proven
    lead = make_lead(env, "team", sessions_root=env / "sessions", session_path=lead_path)
    try:
        await host.attach_lead(lead, surfaces=())
        generation = host.kernel.generation_by_label("scout")
        assert generation is not None and generation.presence != "lost" and generation.pane_id is None
        assert any("scout" in w and "never recorded" in w for w in host.warnings), host.warnings
    finally:
        await host.aclose()
        lead.session.close()
