"""Teams messaging, status, interrupt/stop, claims, capacity and the programmatic launch, in one process."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from corral.orchestration.errors import InvalidRequestError, TargetNotFoundError
from corral.orchestration.surfaces.teams import (
    ReadInboxRequest,
    SendMessageRequest,
    handle_request,
    parse_spawn,
)
from corral.orchestration.surfaces.teams._render import (
    health_details,
    inbox_details,
    interrupt_details,
    render_health,
    render_interrupt,
    render_spawn,
    render_status,
    render_stop,
    spawn_details,
    status_details,
    stop_details,
)
from corral.orchestration.teams.messages.records import TEAM_MESSAGE_TYPE
from corral.orchestration.teams.reports._reports import TEAM_REPORT_TYPE
from corral.orchestration.teams.spawning import _launch as spawn_launch
from corral.settings import CapacitySettings, Settings, TeamsSettings
from tests._ci import require
from tests._waits import eventually

from ._teams_helpers import WAIT, teams_env, write_script

pytestmark = pytest.mark.usefixtures("env")


def _report(content: str) -> dict[str, object]:
    return {"tool_calls": [{"name": "report_and_exit", "args": {"content": content, "outcome": "succeeded"}}]}


def _limits(read: int = 25, write: int = 100, helpers: int = 10, overflow: bool = True) -> Settings:
    return Settings(
        teams=TeamsSettings(
            read_agents=CapacitySettings(max_concurrent=read, queue_overflow=overflow),
            write_agents=CapacitySettings(max_concurrent=write),
            read_helpers=CapacitySettings(max_concurrent=helpers),
        )
    )


async def test_agent_message_to_lead_is_delivered_once_and_wakes_it(tmp_path: Path) -> None:
    write_script(
        tmp_path,
        "lead",
        {
            "steps": [
                {"tool_calls": [{"name": "spawn_agent", "args": {"name": "a", "prompt": "p"}}]},
                {"text": "Waiting."},
            ],
            "on_exhausted": "repeat_last",
            "agents": {
                "a": [
                    {
                        "tool_calls": [
                            {
                                "name": "send_message",
                                "args": {"content": "Need a decision on X.", "summary": "question"},
                            }
                        ]
                    },
                    _report("done"),
                ]
            },
        },
    )
    async with teams_env(tmp_path, "lead") as env:
        await env.lead.prompt("go")
        await env.quiet()
        messages = env.lead_custom(TEAM_MESSAGE_TYPE)
        assert len(messages) == 1
        assert "Need a decision on X." in messages[0]["content"]
        assert messages[0]["details"]["from"] == "a"
        # It is stored in the lead's inbox as read (delivered).
        details = inbox_details(
            await env.teams.messages.read_inbox(
                env.caller, ReadInboxRequest(unread_only=False, mark_as_read=False)
            )
        )
        assert [m["from"] for m in details["messages"]] == ["a"]
        assert details["messages"][0]["read"] is True


async def test_lead_message_steers_a_live_agent_and_missing_recipients_fail(tmp_path: Path) -> None:
    write_script(
        tmp_path,
        "lead",
        {
            "steps": [
                {"tool_calls": [{"name": "spawn_agent", "args": {"name": "a", "prompt": "p"}}]},
                {"text": "w"},
            ],
            "on_exhausted": "repeat_last",
            "agents": {
                "a": [
                    {"tool_calls": [{"name": "bash", "args": {"command": "sleep 30"}}]},
                    {"expect": {"context_contains": ["focus on auth"]}, **_report("focused")},
                ]
            },
        },
    )
    async with teams_env(tmp_path, "lead") as env:
        await env.lead.prompt("go")
        child = None

        def running() -> bool:
            nonlocal child
            member = env.host.repositories.teams.roster.live_team_member(env.caller.session_id, "a")
            child = None if member is None else env.teams.context.child(member.run_id)
            return child is not None and child.active_tool == "bash"

        await eventually(running, env.host)
        with pytest.raises(InvalidRequestError, match="recipient is required"):
            await env.teams.messages.send_message(env.caller, SendMessageRequest(recipient=None, content="x"))
        with pytest.raises(TargetNotFoundError, match="agent is not running"):
            await env.teams.messages.send_message(
                env.caller, SendMessageRequest(recipient="ghost", content="x")
            )
        sent = await env.teams.messages.send_message(
            env.caller, SendMessageRequest(recipient="a", content="focus on auth")
        )
        assert sent.delivery == "active-session", sent
        result = await env.teams.control.interrupt_teammate(env.caller, "a")
        status, idetails = render_interrupt(result), interrupt_details(result)
        assert idetails["status"] == "interrupted", status
        # Interrupted: the bash command died, the agent stays, then continues with the steering it got.
        await env.quiet()
        [report] = env.lead_custom(TEAM_REPORT_TYPE)
        assert "focused" in report["content"]


async def test_capacity_queues_then_drains_in_order(tmp_path: Path) -> None:
    write_script(
        tmp_path,
        "lead",
        {
            "steps": [
                {
                    "tool_calls": [
                        {
                            "name": "spawn_swarm_agents",
                            "args": {
                                "defaults": {"model_slot": "read-collect"},
                                "agents": [{"name": f"m{i}", "prompt": f"task {i}"} for i in range(4)],
                            },
                        }
                    ]
                },
                {"text": "Waiting."},
            ],
            "on_exhausted": "repeat_last",
            "agents": {"*": [_report("done")]},
        },
    )
    async with teams_env(tmp_path, "lead", settings=_limits(read=1)) as env:
        await env.lead.prompt("go")
        await env.quiet()
        [swarm] = env.tool_results("spawn_swarm_agents")
        spawned = swarm["details"]["spawned"]
        assert [s["queued"] for s in spawned] == [False, True, True, True]
        assert [s["queuePosition"] for s in spawned] == [None, 1, 2, 3]
        assert "Spawned 4/4 agents" in swarm["content"][0]["text"]
        reports = env.lead_custom(TEAM_REPORT_TYPE)
        assert [r["details"]["name"] for r in reports] == ["m0", "m1", "m2", "m3"]
        snapshot = env.teams.capacity(env.caller.session_id).snapshot()
        assert snapshot.kinds["read"].active == 0 and snapshot.kinds["read"].queued_names == ()


async def test_overflow_disabled_fails_at_capacity(tmp_path: Path) -> None:
    write_script(
        tmp_path, "lead", {"steps": [{"text": "x"}], "agents": {"*": [{"delay_ms": 60000, "text": "z"}]}}
    )
    async with teams_env(tmp_path, "lead", settings=_limits(read=1, overflow=False)) as env:
        await env.teams.spawning.spawn(env.caller, parse_spawn({"name": "one", "prompt": "p"}))
        with pytest.raises(Exception, match="capacity reached"):
            await env.teams.spawning.spawn(env.caller, parse_spawn({"name": "two", "prompt": "p"}))
        await env.teams.control.stop_teammate(env.caller, "one", None)


async def test_stop_cancels_queued_work_and_status_shows_phases(tmp_path: Path) -> None:
    write_script(
        tmp_path, "lead", {"steps": [{"text": "x"}], "agents": {"*": [{"delay_ms": 60000, "text": "z"}]}}
    )
    async with teams_env(tmp_path, "lead", settings=_limits(read=1)) as env:
        await env.teams.spawning.spawn(env.caller, parse_spawn({"name": "one", "prompt": "p"}))
        queued = await env.teams.spawning.spawn(env.caller, parse_spawn({"name": "two", "prompt": "p"}))
        assert queued.queued is True and queued.queue_position == 1
        result = await env.teams.control.status(env.caller, None)
        text, details = render_status(result), status_details(result)
        phases = {a["name"]: a["phase"] for a in details["agents"]}
        assert phases["two"] == "queued" and phases["one"] in ("starting", "thinking")
        assert "do not poll" in text
        result = await env.teams.control.stop_teammate(env.caller, "two", None)
        stop_text, stopped = render_stop(result), stop_details(result)
        assert stopped["stopped"] is True and "before it started" in stop_text
        assert (env.caller.session_id, "two") not in env.teams.pending
        result = await env.teams.control.stop_teammate(env.caller, "one", "no longer needed")
        _, stop_one = render_stop(result), stop_details(result)
        assert stop_one["stopped"] is True
        await env.quiet()
        assert env.host.kernel.generations() == ()
        # "two" was cancelled before launch: only "one" ever had a generation.
        assert [g.label for g in env.host.kernel.generations(include_finalized=True)] == ["one"]
        result = await env.teams.control.stop_teammate(env.caller, "one", None)
        _, none = render_stop(result), stop_details(result)
        assert none == {
            "session": f"session-{env.caller.session_id}",
            "stopped": False,
            "reason": "not-active",
        }


async def test_same_name_replacement_stops_the_old_run_first(tmp_path: Path) -> None:
    write_script(
        tmp_path, "lead", {"steps": [{"text": "x"}], "agents": {"*": [{"delay_ms": 60000, "text": "z"}]}}
    )
    async with teams_env(tmp_path, "lead") as env:
        first = await env.teams.spawning.spawn(env.caller, parse_spawn({"name": "dup", "prompt": "p"}))
        second = await env.teams.spawning.spawn(env.caller, parse_spawn({"name": "dup", "prompt": "p2"}))
        assert first.run_id != second.run_id
        old = env.host.kernel.get_generation(first.run_id)
        assert old is not None and old.phase == "finalized"
        live = env.host.repositories.teams.roster.live_team_member(env.caller.session_id, "dup")
        assert live is not None and live.run_id == second.run_id
        await env.teams.control.stop_teammate(env.caller, "dup", None)


async def test_check_teammate_recovers_the_report_after_the_agent_left(tmp_path: Path) -> None:
    write_script(
        tmp_path,
        "lead",
        {
            "steps": [
                {"tool_calls": [{"name": "spawn_agent", "args": {"name": "gone", "prompt": "p"}}]},
                {"text": "w"},
            ],
            "on_exhausted": "repeat_last",
            "agents": {"gone": [_report("The persisted body.")]},
        },
    )
    async with teams_env(tmp_path, "lead") as env:
        await env.lead.prompt("go")
        await env.quiet()
        result = await env.teams.control.check_teammate(env.caller, "gone")
        text, details = render_health(result), health_details(result)
        assert details["alive"] is False and details["removedMember"] is True
        assert "The persisted body." in text
        with pytest.raises(TargetNotFoundError, match="no persisted report"):
            await env.teams.control.check_teammate(env.caller, "never")
        result = await env.teams.control.status(env.caller, "gone")
        _, status = render_status(result), status_details(result)
        [snap] = status["agents"]
        assert snap["phase"] == "completed" and snap["outcome"] == "succeeded"
        accepted = env.teams.control.record_report_acceptance(snap["reportId"], "accepted", "looks right")
        assert accepted.acceptance == "accepted" and accepted.acceptance_reason == "looks right"
        with pytest.raises(InvalidRequestError, match="accepted or rejected"):
            env.teams.control.record_report_acceptance(snap["reportId"], "maybe")


async def test_claims_are_exclusive_between_writers(tmp_path: Path) -> None:
    write_script(
        tmp_path,
        "lead",
        {
            "steps": [
                {
                    "tool_calls": [
                        {
                            "name": "spawn_agent",
                            "args": {"name": "w1", "prompt": "p", "model_slot": "write-patch"},
                        },
                    ]
                },
                {"text": "w"},
            ],
            "on_exhausted": "repeat_last",
            "agents": {
                "w1": [
                    {"tool_calls": [{"name": "claim_file", "args": {"paths": ["src/x.py"]}}]},
                    {"delay_ms": 60000, "text": "hold"},
                ],
                "w2": [
                    {"tool_calls": [{"name": "claim_file", "args": {"paths": ["src/y.py", "./src/x.py"]}}]},
                    _report("{{ last_tool_result.conflicts.0.heldBy }}"),
                ],
            },
        },
    )
    async with teams_env(tmp_path, "lead") as env:
        await env.lead.prompt("go")
        await eventually(
            lambda: len(env.host.repositories.teams.roster.file_claims(env.caller.session_id)) == 1,
            env.host,
        )
        await env.teams.spawning.spawn(
            env.caller, parse_spawn({"name": "w2", "prompt": "p", "model_slot": "write-patch"})
        )
        await eventually(lambda: len(env.lead_custom(TEAM_REPORT_TYPE)) == 1, env.host)
        [report] = env.lead_custom(TEAM_REPORT_TYPE)
        assert report["details"]["name"] == "w2" and "w1" in report["content"]
        claims = env.host.repositories.teams.roster.file_claims(env.caller.session_id)
        assert [(c.path, c.agent) for c in claims] == [("src/x.py", "w1")]
        await env.teams.control.stop_teammate(env.caller, "w1", None)
        assert env.host.repositories.teams.roster.file_claims(env.caller.session_id) == ()


async def test_programmatic_launch_answers_with_a_correlated_response(tmp_path: Path) -> None:
    write_script(tmp_path, "lead", {"steps": [{"text": "x"}], "agents": {"*": [_report("done")]}})
    async with teams_env(tmp_path, "lead") as env:
        lead = env.caller.session_id
        ok = await handle_request(
            env.teams,
            lead,
            {
                "requestId": "r1",
                "type": "spawn_agent",
                "params": {"name": "api", "prompt": "p", "metadata": {"operationId": "op"}},
            },
        )
        assert (
            ok is not None
            and ok.ok
            and ok.details is not None
            and ok.details["metadata"] == {"operationId": "op"}
        )
        assert ok.to_json()["requestId"] == "r1" and "content" in ok.to_json()
        bad = await handle_request(env.teams, lead, {"requestId": "r2", "type": "ensure_team", "params": {}})
        assert (
            bad is not None
            and not bad.ok
            and bad.error == "Unsupported orchestration request type: ensure_team"
        )
        assert await handle_request(env.teams, lead, {"type": "spawn_agent", "params": {}}) is None
        forbidden = await handle_request(
            env.teams,
            lead,
            {"requestId": "r3", "type": "spawn_agent", "params": {"prompt": "p", "role": "read"}},
        )
        assert forbidden is not None and not forbidden.ok and "model_slot only" in (forbidden.error or "")
        no_lead = await handle_request(
            env.teams, "nobody", {"requestId": "r4", "type": "spawn_agent", "params": {}}
        )
        assert no_lead is not None and "No active lead session" in (no_lead.error or "")
        await env.quiet()


async def test_nested_helpers_report_to_their_writer_which_waits_for_them(tmp_path: Path) -> None:
    write_script(
        tmp_path,
        "lead",
        {
            "steps": [
                {
                    "tool_calls": [
                        {
                            "name": "spawn_agent",
                            "args": {
                                "name": "writer",
                                "prompt": "p",
                                "model_slot": "write-feature",
                                "allow_nested_read_agents": True,
                            },
                        }
                    ]
                },
                {"text": "w"},
            ],
            "on_exhausted": "repeat_last",
            "agents": {
                "writer": [
                    {
                        "expect": {
                            "tools_include": ["spawn_agent", "spawn_swarm_agents", "get_agent_status"]
                        },
                        "tool_calls": [
                            {
                                "name": "spawn_agent",
                                "args": {"name": "helper", "prompt": "look", "model_slot": "read-collect"},
                            }
                        ],
                    },
                    {"text": "Waiting for my helper."},
                    {"expect": {"context_contains": ["helper facts"]}, **_report("writer done")},
                ],
                "helper": [
                    {"expect": {"tools_exclude": ["spawn_agent", "claim_file"]}, **_report("helper facts")}
                ],
            },
        },
    )
    async with teams_env(tmp_path, "lead") as env:
        await env.lead.prompt("go")
        await env.quiet()
        reports = env.lead_custom(TEAM_REPORT_TYPE)
        assert [r["details"]["name"] for r in reports] == ["writer"]
        helper = next(g for g in env.host.kernel.generations(include_finalized=True) if g.label == "helper")
        assert helper.parent_run_id is not None and helper.cwd == str((tmp_path / "work").resolve())


async def test_read_only_sandbox_blocks_writes_and_network_for_readers_but_not_writers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require("bwrap", "bubblewrap")
    server = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    monkeypatch.setenv("PROBE_PORT", str(port))
    probe = (
        "touch by-{who}; python3 -c \"import socket,sys; socket.create_connection(('127.0.0.1', "
        'int(sys.argv[1])), 3)" {{{{ env.PROBE_PORT }}}} && echo NET-OK'
    )
    write_script(
        tmp_path,
        "lead",
        {
            "steps": [
                {
                    "tool_calls": [
                        {
                            "name": "spawn_agent",
                            "args": {"name": "reader", "prompt": "p", "model_slot": "read-review"},
                        },
                        {
                            "name": "spawn_agent",
                            "args": {"name": "editor", "prompt": "p", "model_slot": "write-patch"},
                        },
                    ]
                },
                {"text": "w"},
            ],
            "on_exhausted": "repeat_last",
            "agents": {
                "reader": [
                    {"tool_calls": [{"name": "bash", "args": {"command": probe.format(who="reader")}}]},
                    _report("exit {{ last_tool_result.exitCode }}"),
                ],
                "editor": [
                    {"tool_calls": [{"name": "bash", "args": {"command": probe.format(who="editor")}}]},
                    _report("exit {{ last_tool_result.exitCode }}"),
                ],
            },
        },
    )
    try:
        async with teams_env(tmp_path, "lead") as env:
            await env.lead.prompt("go")
            await env.quiet()
            spawns = {r["details"]["name"]: r["details"] for r in env.tool_results("spawn_agent")}
            assert spawns["reader"]["sandbox"] == "enforced"
            assert not (tmp_path / "work" / "by-reader").exists()
            assert (tmp_path / "work" / "by-editor").exists()
            reports = {r["details"]["name"]: r["content"] for r in env.lead_custom(TEAM_REPORT_TYPE)}
            assert "exit 0" in reports["editor"]
            assert "exit 0" not in reports["reader"]
    finally:
        server.close()
        await server.wait_closed()
    _ = WAIT


async def test_peers_message_each_other_and_failed_admissions_show_in_status(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_script(
        tmp_path,
        "lead",
        {
            "steps": [{"text": "x"}],
            "on_exhausted": "repeat_last",
            "agents": {
                "listener": [
                    {"tool_calls": [{"name": "bash", "args": {"command": "sleep 20"}}]},
                    {"expect": {"context_contains": ["hello from talker"]}, **_report("heard it")},
                ],
                "talker": [
                    {
                        "tool_calls": [
                            {
                                "name": "send_message",
                                "args": {"recipient": "listener", "content": "hello from talker"},
                            }
                        ]
                    },
                    _report("{{ last_tool_result.delivery }}"),
                ],
            },
        },
    )
    async with teams_env(tmp_path, "lead", settings=_limits(read=2)) as env:
        await env.teams.spawning.spawn(env.caller, parse_spawn({"name": "listener", "prompt": "p"}))

        def listening() -> bool:
            member = env.host.repositories.teams.roster.live_team_member(env.caller.session_id, "listener")
            child = None if member is None else env.teams.context.child(member.run_id)
            return child is not None and child.active_tool == "bash"

        await eventually(listening, env.host)
        await env.teams.spawning.spawn(env.caller, parse_spawn({"name": "talker", "prompt": "p"}))
        await eventually(lambda: len(env.lead_custom(TEAM_REPORT_TYPE)) == 1, env.host)
        [talker] = env.lead_custom(TEAM_REPORT_TYPE)
        assert "active-session" in talker["content"]
        await env.teams.control.interrupt_teammate(env.caller, "listener")
        await eventually(lambda: len(env.lead_custom(TEAM_REPORT_TYPE)) == 2, env.host)
        # A queued spawn whose launch fails is dropped, recorded, and visible in status.
        await env.teams.spawning.spawn(env.caller, parse_spawn({"name": "blocker", "prompt": "p"}))

        def broken(*args: object, **kwargs: object) -> object:
            raise RuntimeError("model runtime unavailable")

        await env.teams.spawning.spawn(env.caller, parse_spawn({"name": "other", "prompt": "p"}))
        monkeypatch.setattr(spawn_launch, "_build_agent", broken)
        queued = await env.teams.spawning.spawn(env.caller, parse_spawn({"name": "doomed", "prompt": "p"}))
        assert queued.queued is True
        await env.teams.control.stop_teammate(env.caller, "blocker", None)
        await eventually(lambda: bool(env.teams.capacity(env.caller.session_id).failures()), env.host)
        result = await env.teams.control.status(env.caller, "doomed")
        _, status = render_status(result), status_details(result)
        [snap] = status["agents"]
        assert snap["phase"] == "failed" and "model runtime unavailable" in snap["error"]
        await env.quiet()
        notices = [m["content"] for m in env.lead_custom(TEAM_MESSAGE_TYPE)]
        assert any("doomed could not start" in n for n in notices)
        await env.teams.control.stop_teammate(env.caller, "other", None)


async def test_favorites_choose_the_model_and_sandbox_off_falls_back_to_an_instruction(
    tmp_path: Path,
) -> None:
    write_script(tmp_path, "lead", {"steps": [{"text": "x"}]})
    write_script(tmp_path, "fav", {"steps": [_report("from the favorite")]})
    settings = Settings(
        favorite_models={"read-collect": {"model": "scripted/fav", "thinking": "low"}},
        teams=TeamsSettings(read_sandbox="off"),
    )
    async with teams_env(tmp_path, "lead", settings=settings) as env:
        outcome = await env.teams.spawning.spawn(
            env.caller, parse_spawn({"prompt": "p", "model_slot": "reading-fast"})
        )
        details = spawn_details(outcome)
        assert details["modelSource"] == "favorite" and details["model"] == "scripted/fav"
        assert details["modelSlot"] == "read-collect" and details["requestedModelSlot"] == "reading-fast"
        assert details["sandbox"] == "instruction" and "instruction only" in render_spawn(outcome)
        assert details["name"].startswith("agent-")
        await env.quiet()
        [report] = env.lead_custom(TEAM_REPORT_TYPE)
        assert "from the favorite" in report["content"]
        inherited = await env.teams.spawning.spawn(
            env.caller, parse_spawn({"prompt": "p", "model_slot": "read-review"})
        )
        assert inherited.model_source == "lead" and inherited.model == "scripted/lead"
        await env.teams.control.stop_teammate(env.caller, inherited.name, None)


async def test_a_bad_favorite_is_one_line_and_a_helper_name_is_not_replaced(tmp_path: Path) -> None:
    write_script(tmp_path, "lead", {"steps": [{"text": "x"}]})
    settings = Settings(favorite_models={"read-review": {"model": "scripted/x", "bogus": "y"}})
    async with teams_env(tmp_path, "lead", settings=settings) as env:
        with pytest.raises(Exception, match=r"^favorite_models\.read-review\.bogus: .*user settings file\.$"):
            await env.teams.spawning.spawn(env.caller, parse_spawn({"prompt": "p"}))


async def test_teams_errors_point_to_teams_tools(tmp_path: Path) -> None:
    write_script(
        tmp_path,
        "lead",
        {
            "steps": [
                {
                    "tool_calls": [
                        {"name": "stop_teammate", "args": {"agent_name": "x"}},
                        {"name": "check_teammate", "args": {"agent_name": "ghost"}},
                    ]
                },
                {"text": "done"},
            ]
        },
    )
    async with teams_env(tmp_path, "lead") as env:
        await env.lead.prompt("go")
        [result] = env.tool_results("check_teammate")
        text = result["content"][0]["text"]
        assert text.startswith("check_teammate failed (target_not_found)")
        assert "get_agent_status" in text and "Call list" not in text


async def test_queued_helpers_keep_their_writer_alive(tmp_path: Path) -> None:
    write_script(
        tmp_path,
        "lead",
        {
            "steps": [
                {
                    "tool_calls": [
                        {
                            "name": "spawn_agent",
                            "args": {
                                "name": "writer",
                                "prompt": "p",
                                "model_slot": "write-critical",
                                "allow_nested_read_agents": True,
                            },
                        }
                    ]
                },
                {"text": "w"},
            ],
            "on_exhausted": "repeat_last",
            "agents": {
                "writer": [
                    {
                        "tool_calls": [
                            {
                                "name": "spawn_swarm_agents",
                                "args": {
                                    "agents": [{"name": "h1", "prompt": "a"}, {"name": "h2", "prompt": "b"}]
                                },
                            }
                        ]
                    },
                    {"text": "Waiting for helpers."},
                    {  # one wake for the swarm: the last helper's report, both in full
                        "expect": {"context_contains": ["facts from h1", "facts from h2"]},
                        **_report("writer done"),
                    },
                ],
                "h1": [_report("facts from h1")],
                "h2": [_report("facts from h2")],
            },
        },
    )
    async with teams_env(tmp_path, "lead", settings=_limits(helpers=1)) as env:
        await env.lead.prompt("go")
        await env.quiet()
        [report] = env.lead_custom(TEAM_REPORT_TYPE)
        assert report["details"]["name"] == "writer" and "writer done" in report["content"]
        stored = env.host.repositories.teams.reports.team_report(report["details"]["report_id"])
        assert stored is not None and stored.report_source == "report_and_exit"
