"""One composition for every process kind (`corral/_compose.py`): each kind gets the same features
except the differences `ABSENT` declares, and the lead's host carries the extensions `compose` built."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, cast

from corral._compose import ABSENT, FEATURES, Feature, LeadProcess, PolicyExtension, WorkerHooks, compose
from corral._ray_worker import ray_place
from corral._tmux.worker import tmux_place
from corral.lead._host import ComposedHost
from corral.llm import ModelRegistry
from corral.orchestration import GenerationRecord, Repositories
from corral.orchestration.budgets import BudgetsExtension
from corral.orchestration.ratelimits import RateLimitsExtension
from corral.orchestration.workspaces._extension import WorkspacesExtension
from corral.orchestration.worktrees._extension import WorktreesExtension
from corral.settings import Settings

if TYPE_CHECKING:
    from corral.orchestration.kernel._remote import RemoteStore


async def _features_by_kind(tmp_path: Path) -> dict[str, frozenset[Feature]]:
    store = Repositories.open(tmp_path / "home" / "corral.db")
    registry = ModelRegistry(Settings(), cwd=tmp_path)
    host = ComposedHost(repositories=store, registry=registry)
    try:
        lead = compose(LeadProcess(host, store))
        # The host carries one extension of each type the lead's composition builds.
        built = {type(extension) for extension in lead.extensions}
        assert built == {
            WorktreesExtension,
            RateLimitsExtension,
            BudgetsExtension,
            WorkspacesExtension,
            PolicyExtension,
        }
        assert built <= {type(extension) for extension in host.extensions}
        generation = cast("GenerationRecord", None)  # read only by a teams member's port
        tmux = compose(tmux_place(store, generation, registry, Settings()))
        ray = compose(ray_place(cast("RemoteStore", object()), tmp_path, None))
        return {"lead": lead.features(), tmux.place.kind: tmux.features(), ray.place.kind: ray.features()}
    finally:
        await host.aclose()


async def test_every_kind_of_process_gets_every_feature_but_its_declared_absent_ones(tmp_path: Path) -> None:
    features = await _features_by_kind(tmp_path)
    assert features == {kind: FEATURES - ABSENT[kind] for kind in ("lead", "tmux", "ray")}
    # The declared differences, spelled out: tmux workers share the lead's workspace, Ray workers
    # bring writes back as a workspace patch instead of a worktree branch.
    assert features["lead"] - features["tmux"] == {"workspaces"}
    assert features["lead"] - features["ray"] == {"worktrees"}


def test_a_worker_child_s_hooks_send_rate_limit_waits_and_failed_results_to_its_place(tmp_path: Path) -> None:
    store = Repositories.open(tmp_path / "corral.db")
    try:
        seen: list[tuple[str, str]] = []
        place = tmux_place(
            store, cast("GenerationRecord", None), ModelRegistry(Settings(), cwd=tmp_path), Settings()
        )
        place = replace(
            place,
            rate_limit_waits=lambda run_id, event: seen.append((run_id, type(event).__name__)),
            result_failed=lambda run_id, message: seen.append((run_id, message)),
        )
        hooks = WorkerHooks(place)
        hooks.agent_event("r1", cast("object", "an event"))  # type: ignore[arg-type]
        hooks.result_failed("r1", "disk full")
        assert seen == [("r1", "str"), ("r1", "disk full")]
    finally:
        store.close()
