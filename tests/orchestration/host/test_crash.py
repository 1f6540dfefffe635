"""Randomized crash test: SIGKILL the host at injected delivery points, restart, prove exactly-once.

Each chain runs `crash_driver.py` repeatedly on one data root; every run but
the last is killed at a random fault point (`after_result_row`,
`after_owner_append`, `before_cleanup`, on a random hit; now and then
`after_task_ack`, which leaves a generation `lost`). The last run has no
faults. Then every durable result must be delivered, and the lead's session
must hold exactly one `corral-agent-result` entry per result (none for
anything else). Two chains run in parallel; together they cover at least
100 crash points.

Each chain's runs are forked from one server process that imported corral
once (`crash_driver.py --serve`): a run is still a process of its own with a
fresh host, store connection and session, killed by a real SIGKILL, but it no
longer pays a Python start-up and corral's imports (about 0.7 s of CPU of a
run's 0.8 s), which made the hundred-odd runs miss the timeout on a loaded
machine.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from corral.orchestration import RESULT_TYPE, Repositories

DRIVER = Path(__file__).with_name("crash_driver.py")
POINTS = ("after_result_row", "after_owner_append", "before_cleanup", "after_task_ack")
WEIGHTS = (2, 2, 2, 1)
AGENTS_PER_RUN = 3
CRASHES_PER_CHAIN = 52
CHAINS = 2
RUN_BUDGET_S = 4.0
"""Wall time allowed for one run of a chain. A run costs about 0.1 s of CPU (a fork, a host, three
agents, a few hundred SQLite statements); measured on the 2-core test machine: 0.12 s of wall time
in an already warm process, 0.5 s a forked run at load 13, 1.9 s at load 14 under `nice -n 5` with
both chains running (before the fork server: over 4 s, most of it Python start-up and imports). The runs are CPU-bound, so the time the test needs scales with the machine's load,
not with anything the test could wait on: its timeout is this budget times the runs of a chain."""
TIMEOUT_S = 60 + (CRASHES_PER_CHAIN + 1) * RUN_BUDGET_S
"""The chains run in parallel, each `CRASHES_PER_CHAIN + 1` runs; 60 s more for the fork servers to
import corral and for the checks."""


def _env(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "CORRAL_FAULTS"}  # each run arms its own
    env.update(
        CORRAL_HOME=str(root / "home"),
        XDG_CONFIG_HOME=str(root / "config"),
        CORRAL_SCRIPTS=str(root / "scripts"),
        # the checkout (for `tests`), then what the suite runs with (a worktree's `src`, when set)
        PYTHONPATH=os.pathsep.join(
            filter(None, (str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH")))
        ),
    )
    return env


@dataclass(frozen=True)
class _Run:
    returncode: int
    stdout: str
    stderr: str


class _Driver:
    """The chain's fork server (`crash_driver.py --serve`): each run is a process of its own, forked
    from one that imported corral once, so a run costs a fork rather than a Python start-up."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._process = subprocess.Popen(
            [sys.executable, str(DRIVER), "--serve"],
            env=_env(root),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def run(self, count: int, faults: str | None) -> _Run:
        out, err = self._root / "run.out", self._root / "run.err"
        process = self._process
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(f"{self._root} {count} {faults or '-'} {out} {err}\n")
        process.stdin.flush()
        answer = process.stdout.readline()
        assert answer, f"the fork server died: {process.wait()}"
        return _Run(int(answer), out.read_text(), err.read_text())

    def close(self) -> None:
        process = self._process
        assert process.stdin is not None and process.stdout is not None
        process.stdin.close()
        try:
            assert process.wait(timeout=60) == 0
        finally:
            process.stdout.close()


def _chain(root: Path, seed: int) -> tuple[int, list[str]]:
    root.mkdir()
    driver = _Driver(root)
    try:
        return _chain_runs(root, seed, driver)
    finally:
        driver.close()


def _chain_runs(root: Path, seed: int, driver: _Driver) -> tuple[int, list[str]]:
    rng = random.Random(seed)
    (root / "scripts").mkdir()
    script = {
        "steps": [{"text": "noted"}],
        "on_exhausted": "repeat_last",
        "agents": {"*": [{"text": "agent result"}]},
    }
    (root / "scripts" / "crash.yaml").write_text(yaml.safe_dump(script))
    crashes = 0
    problems: list[str] = []
    total = 0
    for _ in range(CRASHES_PER_CHAIN):
        total += AGENTS_PER_RUN
        point = f"{rng.choices(POINTS, weights=WEIGHTS)[0]}:{rng.randint(1, AGENTS_PER_RUN)}"
        done = driver.run(total, point)
        if done.returncode == -signal.SIGKILL:
            crashes += 1
        elif done.returncode != 0:
            problems.append(f"{point}: exit {done.returncode}: {done.stderr[-2000:]}")
    final = driver.run(total, None)
    if final.returncode != 0 or "done" not in final.stdout:
        problems.append(f"final run failed: {final.returncode}: {final.stderr[-2000:]}")
    return crashes, problems


def _check(root: Path) -> None:
    lead_path = Path((root / "lead.txt").read_text())
    counts: dict[str, int] = {}
    for line in lead_path.read_text().splitlines():
        entry = json.loads(line)
        if entry.get("type") == "custom_message" and entry.get("customType") == RESULT_TYPE:
            request_id = entry["details"]["request_id"]
            counts[request_id] = counts.get(request_id, 0) + 1
    with Repositories.open(root / "home" / "corral.db") as store:
        generations = store.kernel.generations(include_finalized=True)
        results = [
            store.kernel.get_result(g.completed_request_id) for g in generations if g.completed_request_id
        ]
        stored = {r.request_id: r for r in results if r is not None}
        for generation in generations:
            assert generation.phase == "finalized" or generation.presence == "lost", generation
    assert stored, "no results were stored"
    assert all(r.delivery == "delivered" for r in stored.values())
    assert set(counts) == set(stored), set(counts) ^ set(stored)
    assert all(n == 1 for n in counts.values()), {k: n for k, n in counts.items() if n != 1}


@pytest.mark.timeout(TIMEOUT_S)
def test_crash_points_deliver_exactly_once(tmp_path: Path) -> None:
    seed = random.randrange(1 << 30)
    with ThreadPoolExecutor(CHAINS) as pool:
        outcomes = list(pool.map(lambda i: _chain(tmp_path / f"chain{i}", seed + i), range(CHAINS)))
    problems = [p for _, found in outcomes for p in found]
    assert not problems, (seed, problems[:3])
    assert sum(crashes for crashes, _ in outcomes) >= 100, (seed, [c for c, _ in outcomes])
    for index in range(CHAINS):
        _check(tmp_path / f"chain{index}")
