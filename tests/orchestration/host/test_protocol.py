"""The host↔worker protocol (`host/protocol.py`): one frozen, versioned `WorkerLaunch` that survives
its JSON round-trip whole, and that a worker refuses — with a line saying what to do, before it
touches the store — when a newer corral wrote it, when it names an agent harness the worker does
not run, or when it carries a part of an extension the worker does not know."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corral._ray_worker import RAY_WORKER_PARTS, RayWorker
from corral._tmux.worker import WORKER_PARTS
from corral.llm import THINKING_LEVELS
from corral.mcp_servers import McpGrant
from corral.orchestration import Repositories
from corral.orchestration.host._ray_launch import RayLaunch
from corral.orchestration.host._worker import read_launch_file, write_launch_file
from corral.orchestration.host.protocol import (
    CORRAL_HARNESS,
    LAUNCH_VERSION,
    BuiltAgent,
    LaunchError,
    ManagedAgentSpec,
    WorkerLaunch,
)
from corral.orchestration.teams.launch import MemberLaunch
from corral.orchestration.teams.roster.records import TeamMemberRecord
from corral.orchestration.workspaces.records import Snapshot, WorkspaceIdentity, WorkspaceLaunch
from corral.settings import PermissionLayer, PermissionsSettings, Settings
from tests.orchestration._store_helpers import new_generation

PARTS = (MemberLaunch, WorkspaceLaunch)
_LAYER = PermissionLayer("definition `scout`", PermissionsSettings(deny=["Bash(git push:*)"], default="ask"))

text = st.text(max_size=40)
names = st.lists(st.sampled_from(["read", "bash", "edit", "write", "grep", "find", "ls"]), max_size=7)
thinking = st.sampled_from(THINKING_LEVELS)
grants = st.none() | st.builds(
    McpGrant, st.lists(st.sampled_from(["git", "fs", "everything"]), max_size=3).map(tuple), st.booleans()
)

built_agents = st.builds(
    BuiltAgent,
    model=text,
    thinking=thinking,
    system_prompt=text,
    tools=st.none() | names.map(tuple),
    sandbox=st.booleans(),
    ask_owner=st.booleans(),
    mcp=grants,
)
defined_agents = st.builds(
    ManagedAgentSpec,
    label=text,
    definition=text,
    model_ref=text,
    thinking=thinking,
    tool_names=names.map(tuple),
    body=text,
    system_prompt_mode=st.sampled_from(["append", "replace"]),
    mcp=grants,
)
members = st.builds(
    TeamMemberRecord,
    run_id=text,
    lead_session_id=text,
    name=text,
    tier=st.sampled_from(["explore", "code"]),
    requested_tier=text,
    kind=st.sampled_from(["read", "write"]),
    depth=st.integers(0, 1),
    parent_run_id=st.none() | text,
    allow_nested=st.booleans(),
    model=text,
    thinking=text,
    model_source=st.sampled_from(["favorite", "lead"]),
    session_context=st.sampled_from(["none", "lazy"]),
    session_context_path=st.none() | text,
    sandbox=st.sampled_from(["enforced", "instruction", "none"]),
    metadata=st.none() | st.dictionaries(text, text | st.integers(), max_size=3),
    prompt=text,
    live=st.booleans(),
    fence=st.sampled_from(["none", "quarantined"]),
    fence_reason=st.none() | text,
    created_at=st.integers(0, 2**53),
    assigned_checks=st.none() | st.lists(st.dictionaries(text, text, max_size=2), max_size=2),
    repair_policy=st.none() | st.just({"maxAttempts": 2}),
)
snapshots = st.builds(
    Snapshot,
    top=text,
    subdir=text,
    head=text,
    base=text,
    tree=text,
    pack=st.binary(max_size=64),
    skipped=st.lists(text, max_size=3).map(tuple),
    attributes=st.booleans(),
)
workspace_parts = st.builds(
    WorkspaceLaunch,
    st.builds(
        WorkspaceIdentity, cwd=text, top=st.none() | text, head=st.none() | text, tree=st.none() | text
    ),
    mode=st.sampled_from(["auto", "shared", "snapshot"]),
    writes=st.booleans(),
    snapshot=st.none() | snapshots,
)
member_parts = st.builds(MemberLaunch, members, mission=st.none() | text)


@st.composite
def launches(draw: st.DrawFn) -> WorkerLaunch:
    parts = []
    if draw(st.booleans()):
        parts.append(draw(member_parts))
    if draw(st.booleans()):
        parts.append(draw(workspace_parts))
    return WorkerLaunch(
        draw(built_agents | defined_agents),
        resume_prompt=draw(st.none() | text),
        context_retirement=draw(st.booleans()),
        parts=tuple(draw(st.permutations(parts))),
        settings=draw(st.none() | st.just(Settings()) | st.just(Settings(shell_path="/bin/sh"))),
        heartbeat=draw(st.none() | text),
        permissions=draw(st.just(()) | st.just((_LAYER,))),
    )


@settings(max_examples=150, deadline=None)
@given(launches())
def test_a_launch_survives_its_json_round_trip_whole(launch: WorkerLaunch) -> None:
    read = WorkerLaunch.from_json(launch.to_json(), parts=PARTS)
    assert read == launch
    assert read.version == LAUNCH_VERSION and read.harness == CORRAL_HARNESS
    assert read.part(MemberLaunch) == launch.part(MemberLaunch)
    assert read.part(WorkspaceLaunch) == launch.part(WorkspaceLaunch)


def test_the_host_names_no_feature_in_the_description() -> None:
    """The kernel-level keys are the protocol's; a feature's data lives under its extension's name."""
    member = MemberLaunch(_member(), mission="go")
    launch = WorkerLaunch(_built(), parts=(member,))
    data = json.loads(launch.to_json())
    assert sorted(data) == [
        "agent",
        "contextRetirement",
        "harness",
        "heartbeat",
        "parts",
        "permissions",
        "resumePrompt",
        "settings",
        "version",
    ]
    assert list(data["parts"]) == ["teams"]
    assert data["parts"]["teams"]["mission"] == "go"


def _built() -> BuiltAgent:
    return BuiltAgent(model="scripted/x", thinking="off", system_prompt="You are x.", tools=("read",))


def _member() -> TeamMemberRecord:
    return TeamMemberRecord(
        run_id="r1",
        lead_session_id="s1",
        name="scout",
        tier="explore",
        requested_tier="explore",
        kind="read",
        depth=0,
        parent_run_id=None,
        allow_nested=False,
        model="scripted/x",
        thinking="off",
        model_source="lead",
        session_context="none",
        session_context_path=None,
        sandbox="enforced",
        metadata=None,
        prompt="look",
        live=True,
        fence="none",
        fence_reason=None,
        created_at=1,
    )


def _with(launch: WorkerLaunch, **changes: object) -> str:
    data = json.loads(launch.to_json())
    data.update(changes)
    return json.dumps(data)


def test_a_description_from_a_newer_corral_is_refused_with_what_to_do() -> None:
    newer = _with(WorkerLaunch(_built()), version=LAUNCH_VERSION + 1)
    with pytest.raises(LaunchError) as refused:
        WorkerLaunch.from_json(newer, parts=PARTS)
    assert str(refused.value) == (
        f"the launch description is version {LAUNCH_VERSION + 1}, newer than this corral reads "
        f"({LAUNCH_VERSION}); run the same corral version on the host and its workers"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{}", "not a launch description (no valid `version`)"),
        ('{"version": true}', "not a launch description (no valid `version`)"),
        ('{"version": 0}', "not a launch description (no valid `version`)"),
        ("[1]", "not a launch description (not a JSON object)"),
        ('{"version": 1}', "the launch description has no `agent` object"),
        ('{"version": 1, "agent": {"kind": "acp"}}', "unknown agent kind 'acp' in the launch description"),
        ('{"version": 1, "agent": {"kind": "built"}}', "the launch's agent `model` is missing or not text"),
    ],
)
def test_a_malformed_description_is_refused_naming_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(LaunchError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        WorkerLaunch.from_json(text, parts=PARTS)


def test_a_part_of_an_unknown_extension_is_refused() -> None:
    launch = WorkerLaunch(_built(), parts=(MemberLaunch(_member()),))
    with pytest.raises(LaunchError, match="a part of extension 'teams' that this worker does not know"):
        WorkerLaunch.from_json(launch.to_json(), parts=(WorkspaceLaunch,))


def test_an_extension_has_at_most_one_part_and_with_part_replaces_it() -> None:
    first, second = MemberLaunch(_member(), mission="a"), MemberLaunch(_member(), mission="b")
    with pytest.raises(LaunchError, match="twice: teams"):
        WorkerLaunch(_built(), parts=(first, second))
    assert WorkerLaunch(_built(), parts=(first,)).with_part(second).parts == (second,)


def test_an_unknown_harness_is_refused_and_the_corral_harness_runs() -> None:
    WorkerLaunch(_built()).require_harness(CORRAL_HARNESS)
    acp = WorkerLaunch.from_json(_with(WorkerLaunch(_built()), harness="acp"), parts=PARTS)
    assert acp.harness == "acp"  # parsing keeps it: the worker decides what it runs
    with pytest.raises(LaunchError) as refused:
        acp.require_harness(CORRAL_HARNESS)
    assert str(refused.value) == (
        "this worker runs agents with the corral harness, not 'acp'; "
        "start the agent where that harness is available, or with the corral harness"
    )


def test_both_workers_read_every_part_the_host_writes() -> None:
    """A part a host writes that a worker cannot parse would be refused at run time, in another process."""
    assert set(WORKER_PARTS) == set(RAY_WORKER_PARTS) == {MemberLaunch, WorkspaceLaunch}


def test_the_launch_file_is_private_and_reads_back(tmp_path: Path) -> None:
    launch = WorkerLaunch(_built(), settings=Settings(), heartbeat=str(tmp_path / "beat"))
    path = write_launch_file(tmp_path, "r1", launch)
    assert path.stat().st_mode & 0o777 == 0o600
    assert read_launch_file(path, parts=PARTS) == launch


def _corral_worker(launch: Path, store: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "corral.cli",
            "worker",
            "--run-id",
            "r1",
            "--store",
            str(store),
            "--launch",
            str(launch),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            {"harness": "acp"},
            "corral worker: cannot run the agent of launch file {launch}: this worker runs agents with the "
            "corral harness, not 'acp'; start the agent where that harness is available, or with the "
            "corral harness",
        ),
        (
            {"version": LAUNCH_VERSION + 1},
            "corral worker: cannot read launch file {launch}: the launch description is version "
            f"{LAUNCH_VERSION + 1}, newer than this corral reads ({LAUNCH_VERSION}); run the same corral "
            "version on the host and its workers",
        ),
    ],
    ids=["unknown-harness", "newer-version"],
)
def test_corral_worker_refuses_a_launch_it_cannot_run_in_one_line_before_opening_the_store(
    tmp_path: Path, change: dict[str, object], expected: str
) -> None:
    launch = tmp_path / "launch.json"
    launch.write_text(_with(WorkerLaunch(_built(), settings=Settings()), **change))
    store = tmp_path / "corral.db"
    done = _corral_worker(launch, store, {**os.environ, "CORRAL_HOME": str(tmp_path / "home")})
    assert done.returncode == 2
    assert done.stderr.strip() == expected.format(launch=launch)
    assert not store.exists()  # nothing durable: the store was never opened


def test_a_ray_worker_refuses_a_launch_for_another_harness_before_it_holds_the_agent(tmp_path: Path) -> None:
    worker = RayWorker(slots=1)
    try:
        with Repositories.open(tmp_path / "corral.db") as store:
            generation, task = new_generation(store.kernel, session_id="s1", ack=False)
            payload = RayLaunch(
                generation=generation,
                task=task,
                launch_json=_with(WorkerLaunch(_built(), settings=Settings()), harness="acp"),
                session_name="s.jsonl",
                session_bytes=b"",
            )
            with pytest.raises(LaunchError, match="not 'acp'"):
                asyncio.run(worker.start(payload))
        assert worker.runs == {}
        assert list(worker.folder.iterdir()) == []  # no session copy was written
    finally:
        asyncio.run(worker.shutdown())
