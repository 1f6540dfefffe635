"""Workspaces across the Ray cluster: a worker actor on another node opens the agent's workspace with
the lead's plan (the shared-filesystem check runs there), works in it, and hands back its patch,
which the lead lands. Both paths: in place on a shared filesystem, and a snapshot (forced, and the
`auto` fallback when the node's check finds the workspace changed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from corral.orchestration.workspaces._remote import (
    NodeWorkspace,
    PatchLanding,
    SnapshotNeeded,
    WorkspacePlan,
    close_workspace,
    open_workspace,
    plan_for,
    with_snapshot,
)
from corral.orchestration.workspaces.records import WorkspacePatch
from tests.orchestration.teams._git_helpers import GIT_ENV, git, make_repo

from .conftest import RayTestCluster, require_ray

ray = require_ray()


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)


@ray.remote(num_cpus=0)
class _NodeAgent:
    """Stands in for the Ray worker's part: open the workspace, edit as an agent would, close it."""

    def __init__(self) -> None:
        self.workspace: NodeWorkspace | None = None

    def node(self) -> str:
        return str(ray.get_runtime_context().get_node_id())

    def open(self, plan: WorkspacePlan, parent: str) -> NodeWorkspace | SnapshotNeeded:
        opened = open_workspace(plan, Path(parent))
        if isinstance(opened, NodeWorkspace):
            self.workspace = opened
        return opened

    def edit(self, files: dict[str, bytes]) -> None:
        assert self.workspace is not None
        for name, data in files.items():
            path = self.workspace.cwd / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)

    def close(self) -> WorkspacePatch | None:
        assert self.workspace is not None
        return close_workspace(self.workspace)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = make_repo(tmp_path / "lead", {"app.py": "a = 1\nb = 2\n", "README.md": "hello\n"})
    (root / "logo.png").write_bytes(bytes(range(256)))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "logo")
    return root.resolve()


def _agent_on_worker_node(ray_cluster: RayTestCluster) -> object:
    ray.init(address=ray_cluster.address, namespace="corral-test-workspaces", log_to_driver=False)
    agent = _NodeAgent.options(resources={ray_cluster.worker.label: 0.01}).remote()
    assert ray.get(agent.node.remote(), timeout=60) == ray_cluster.worker.node_id
    return agent


def test_on_a_shared_filesystem_the_remote_agent_works_in_place(
    ray_cluster: RayTestCluster, repo: Path, tmp_path: Path
) -> None:
    agent = _agent_on_worker_node(ray_cluster)
    (repo / "notes.txt").write_text("uncommitted, seen on the node too\n")
    plan = plan_for(repo, "auto", writes=True)

    opened = ray.get(agent.open.remote(plan, str(tmp_path / "node")), timeout=60)

    assert isinstance(opened, NodeWorkspace) and opened.shared and opened.cwd == repo
    ray.get(agent.edit.remote({"app.py": b"a = 1\nb = 20\n"}), timeout=60)
    assert (repo / "app.py").read_text() == "a = 1\nb = 20\n"  # the edit is the workspace's edit
    assert ray.get(agent.close.remote(), timeout=60) is None  # nothing to ship back
    assert not (tmp_path / "node").exists()


async def test_on_a_snapshot_the_write_agents_patch_lands_and_a_conflicting_one_is_reported(
    ray_cluster: RayTestCluster, repo: Path, tmp_path: Path
) -> None:
    agent = _agent_on_worker_node(ray_cluster)
    (repo / "notes.txt").write_text("uncommitted\n")
    plan = plan_for(repo, "auto", writes=True)
    (repo / "README.md").write_text("hello, changed after the plan\n")  # the node sees another state

    needed = ray.get(agent.open.remote(plan, str(tmp_path / "node")), timeout=60)
    assert isinstance(needed, SnapshotNeeded) and "uncommitted changes" in needed.reason

    opened = ray.get(agent.open.remote(with_snapshot(plan), str(tmp_path / "node")), timeout=60)
    assert isinstance(opened, NodeWorkspace) and not opened.shared
    assert (
        opened.cwd.parent == tmp_path / "node" and (opened.cwd / "notes.txt").read_text() == "uncommitted\n"
    )
    ray.get(
        agent.edit.remote(
            {"app.py": b"a = 1\nb = 2\nc = 3\n", "logo.png": b"\x00new", "new/x.py": b"x = 1\n"}
        ),
        timeout=60,
    )
    patch = ray.get(agent.close.remote(), timeout=60)
    assert isinstance(patch, WorkspacePatch) and patch.files == ("app.py", "logo.png", "new/x.py")
    assert not opened.cwd.exists()  # the node's private copy is gone

    landing = PatchLanding()
    outcome = await landing.land(repo, patch, run_id="run-1")
    assert outcome.kind == "applied"
    assert (repo / "app.py").read_text() == "a = 1\nb = 2\nc = 3\n"
    assert (repo / "logo.png").read_bytes() == b"\x00new"
    assert (repo / "new" / "x.py").read_text() == "x = 1\n"
    assert (repo / "README.md").read_text() == "hello, changed after the plan\n"

    # A second agent on the same snapshot changes the same file: its patch no longer applies.
    second = _NodeAgent.options(resources={ray_cluster.worker.label: 0.01}).remote()
    forced = with_snapshot(plan_for(repo, "snapshot", writes=True))  # a snapshot even where shared
    assert not ray.get(second.open.remote(forced, str(tmp_path / "node")), timeout=60).shared
    ray.get(second.edit.remote({"app.py": b"a = 100\n"}), timeout=60)
    stale = ray.get(second.close.remote(), timeout=60)
    (repo / "app.py").write_text("a = 1, the user's\n")
    before = {p.name: p.read_bytes() for p in repo.iterdir() if p.is_file()}

    refused = await landing.land(repo, stale, run_id="run-2")

    assert refused.kind == "conflict" and [p.path for p in refused.problems] == ["app.py"]
    assert {p.name: p.read_bytes() for p in repo.iterdir() if p.is_file()} == before


# --- the Ray runtime: a worker hosts an agent only on a node that shares its workspace ---------------


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    from tests.orchestration._host_helpers import prepare_env

    prepare_env(tmp_path, monkeypatch)
    agents = tmp_path / "config" / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    (agents / "builder.md").write_text(
        "---\nname: builder\ndescription: Runs commands.\ntools: [read, bash]\n---\nRun what you are asked.\n"
    )
    make_repo(tmp_path / "work", {"app.py": "a = 1\n"})
    return tmp_path


def _ray_settings(cluster: RayTestCluster, workspace: str = "shared") -> object:
    import uuid

    from corral.settings import RaySettings, Settings

    ray_config = RaySettings(
        address=cluster.address,
        namespace=f"t-{uuid.uuid4().hex[:8]}",
        num_cpus=0.1,
        agents_per_worker=4,
        workspace=workspace,  # type: ignore[arg-type]
    )
    return Settings(runtime="ray", ray=ray_config)


LEAD = {"steps": [{"text": "noted"}], "on_exhausted": "repeat_last"}


async def test_a_ray_agent_works_in_place_in_a_git_workspace_its_node_shares(
    env: Path, ray_cluster: RayTestCluster
) -> None:
    from corral.orchestration import RESULT_TYPE
    from corral.orchestration.surfaces import DelegateParams
    from tests.orchestration._host_helpers import team, write_script

    agent = [
        {"tool_calls": [{"name": "bash", "args": {"command": "echo b = 2 >> app.py"}}]},
        {"text": "Edited."},
    ]
    write_script(env, "team", {**LEAD, "agents": {"*": agent}})
    async with team(env, "team", settings=_ray_settings(ray_cluster)) as t:
        await t.controller.delegate(t.caller, DelegateParams(definition="builder", task="Edit"))
        await t.quiet()
        assert ["Edited." in str(r["content"]) for r in t.lead_entries(RESULT_TYPE)] == [True]
    assert (env / "work" / "app.py").read_text() == "a = 1\nb = 2\n"  # in place: the edit is the workspace's


async def test_a_node_that_does_not_share_the_workspace_refuses_the_agent_and_nothing_starts(
    env: Path, ray_cluster: RayTestCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dataclasses

    import corral.orchestration.workspaces._snapshot as workspaces
    from corral.orchestration.errors import PaneNotReadyError
    from corral.orchestration.surfaces import DelegateParams
    from tests.orchestration._host_helpers import team, write_script

    real = workspaces.identify

    def another_checkout(cwd: Path, *, tree: bool = True) -> object:
        # The lead's checkout is at another commit than the node's (only the lead's view is faked;
        # the check itself runs in the worker process on the node, against the real repository).
        return dataclasses.replace(real(cwd, tree=tree), head="0" * 40)

    monkeypatch.setattr(workspaces, "identify", another_checkout)
    write_script(env, "team", {**LEAD, "agents": {"*": [{"text": "never"}]}})
    async with team(env, "team", settings=_ray_settings(ray_cluster)) as t:
        with pytest.raises(
            PaneNotReadyError, match=r"not shared with node .*HEAD of .* on this node"
        ) as caught:
            await t.controller.delegate(t.caller, DelegateParams(definition="builder", task="Edit"))
        assert caught.value.rollback_occurred
        assert "mount it at the same path" in str(caught.value)
        assert t.host.kernel.generations() == ()
    assert git(env / "work", "status", "--porcelain") == ""


async def test_a_write_agent_on_a_snapshot_gets_its_changes_landed_before_its_result_is_delivered(
    env: Path, ray_cluster: RayTestCluster
) -> None:
    from corral.orchestration import RESULT_TYPE
    from corral.orchestration.surfaces import DelegateParams
    from tests.orchestration._host_helpers import team, write_script

    (env / "work" / "notes.txt").write_text("uncommitted, shipped with the snapshot\n")
    edit = "cat notes.txt > seen.txt && echo b = 2 >> app.py && pwd > where.txt"
    agent = [{"tool_calls": [{"name": "bash", "args": {"command": edit}}]}, {"text": "Edited."}]
    write_script(env, "team", {**LEAD, "agents": {"*": agent}})
    async with team(env, "team", settings=_ray_settings(ray_cluster, "snapshot")) as t:
        await t.controller.delegate(t.caller, DelegateParams(definition="builder", task="Edit"))
        await t.quiet()
        results = [str(r["content"]) for r in t.lead_entries(RESULT_TYPE)]
    assert len(results) == 1 and "Edited." in results[0]
    assert "Workspace: the agent's changes to 3 files were applied" in results[0], results[0]
    work = env / "work"
    assert (work / "app.py").read_text() == "a = 1\nb = 2\n"
    assert (work / "seen.txt").read_text() == "uncommitted, shipped with the snapshot\n"
    where = (work / "where.txt").read_text().strip()
    assert where != str(work) and "corral-workspace-" in where  # it worked on the node's private copy
    assert not Path(where).exists()  # which is gone


async def test_a_conflicting_patch_from_a_ray_agent_is_reported_in_its_result_and_nothing_is_overwritten(
    env: Path, ray_cluster: RayTestCluster
) -> None:
    from corral.orchestration import RESULT_TYPE
    from corral.orchestration.surfaces import DelegateParams
    from tests.orchestration._host_helpers import team, write_script

    lead_file = env / "work" / "app.py"
    # The user changes app.py on the lead's machine while the agent changes its copy of it.
    edit = f"echo users-edit > {lead_file} && echo agents-edit > app.py && echo new > other.txt"
    agent = [{"tool_calls": [{"name": "bash", "args": {"command": edit}}]}, {"text": "Edited."}]
    write_script(env, "team", {**LEAD, "agents": {"*": agent}})
    async with team(env, "team", settings=_ray_settings(ray_cluster, "snapshot")) as t:
        await t.controller.delegate(t.caller, DelegateParams(definition="builder", task="Edit"))
        await t.quiet()
        results = [str(r["content"]) for r in t.lead_entries(RESULT_TYPE)]
    assert len(results) == 1 and "Edited." in results[0]
    assert "conflict with the workspace and were not applied: app.py" in results[0], results[0]
    assert "nothing in the workspace changed" in results[0]
    assert lead_file.read_text() == "users-edit\n"
    assert not (env / "work" / "other.txt").exists()  # all or nothing


async def test_auto_works_in_place_where_the_node_shares_the_workspace(
    env: Path, ray_cluster: RayTestCluster
) -> None:
    from corral.orchestration import RESULT_TYPE
    from corral.orchestration.surfaces import DelegateParams
    from tests.orchestration._host_helpers import team, write_script

    edit = "echo b = 2 >> app.py && pwd > where.txt"
    agent = [{"tool_calls": [{"name": "bash", "args": {"command": edit}}]}, {"text": "Edited."}]
    write_script(env, "team", {**LEAD, "agents": {"*": agent}})
    async with team(env, "team", settings=_ray_settings(ray_cluster, "auto")) as t:
        await t.controller.delegate(t.caller, DelegateParams(definition="builder", task="Edit"))
        await t.quiet()
        results = [str(r["content"]) for r in t.lead_entries(RESULT_TYPE)]
    assert len(results) == 1 and "Edited." in results[0] and "Workspace:" not in results[0]
    assert (env / "work" / "where.txt").read_text().strip() == str((env / "work").resolve())
    assert (env / "work" / "app.py").read_text() == "a = 1\nb = 2\n"


async def test_a_host_killed_after_landing_a_patch_and_before_storing_its_result_lands_it_once(
    env: Path, ray_cluster: RayTestCluster
) -> None:
    """SIGKILL between the patch landing on the lead's workspace and the result being stored: the
    next host collects the result once and does not apply the patch a second time."""
    import asyncio
    import os
    import signal
    import sys
    import uuid

    from corral.orchestration import RESULT_TYPE, Repositories
    from corral.settings import RaySettings, Settings
    from tests.orchestration._host_helpers import WAIT, team, write_script

    agent = [
        {"tool_calls": [{"name": "bash", "args": {"command": "echo b = 2 >> app.py"}}]},
        {"text": "Edited."},
    ]
    write_script(env, "team", {**LEAD, "agents": {"*": agent}})
    namespace = f"t-{uuid.uuid4().hex[:8]}"
    driver = Path(__file__).parent / "ray_host_driver.py"
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(driver),
        str(env),
        ray_cluster.address,
        namespace,
        "--workspace=snapshot",
        "editor",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env={**os.environ, "CORRAL_FAULTS": "after_remote_result"},
    )
    out, _ = await asyncio.wait_for(process.communicate(), WAIT * 3)
    assert process.returncode == -signal.SIGKILL, out  # killed by the fault point, not by the test
    app = env / "work" / "app.py"
    assert app.read_text() == "a = 1\nb = 2\n"  # the patch landed
    store = Repositories.open(env / "home" / "corral.db")
    try:
        generation = store.kernel.generation_by_label("editor")
        assert generation is not None
        (task,) = [r for r in store.kernel.requests(generation.run_id) if r.kind == "task"]
        assert store.kernel.get_result(task.request_id) is None  # and its result was not stored
    finally:
        store.close()

    lead_path = Path((env / "lead.txt").read_text())
    ray_config = RaySettings(
        address=ray_cluster.address,
        namespace=namespace,
        num_cpus=0.1,
        agents_per_worker=4,
        workspace="snapshot",
    )
    settings = Settings(runtime="ray", ray=ray_config)
    async with team(env, "team", settings=settings, session_path=lead_path) as t:
        await t.quiet()
        results = [str(r["content"]) for r in t.lead_entries(RESULT_TYPE)]
        assert len(results) == 1 and "Edited." in results[0], results
        assert "Workspace: the agent's changes to 1 file(s) are in the workspace (app.py)." in results[0]
        assert t.host.kernel.generation_by_label("editor") is None  # finalized
    assert app.read_text() == "a = 1\nb = 2\n"  # not applied twice
    async with team(env, "team", settings=settings, session_path=lead_path) as t:
        await t.quiet()
        assert len(t.lead_entries(RESULT_TYPE)) == 1
