"""Exactly once with a cursor: SIGKILL a Python-API program at random points, reopen, resume.

Each chain runs `crash_program.py` again and again on one data root; every run but the last is
killed, either by the program itself just before or just after it logged the N-th item (the log
is its cursor), or inside the core's delivery (`CORRAL_FAULTS`: after the result row, after the
append to the lead's session, before cleanup). A run reopens the lead session with
`open_lead(session=...)` and resumes with `items(after=cursor)`. At the end the program's log
must hold every result the lead's session holds exactly once: none duplicated, none lost.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from corral.orchestration import RESULT_TYPE, Repositories

PROGRAM = Path(__file__).with_name("crash_program.py")
KILLS = ("before", "after", "after_result_row", "after_owner_append", "before_cleanup")
AGENTS_PER_RUN = 2
CRASHES_PER_CHAIN = 26
CHAINS = 2


def _run(root: Path, kill: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CORRAL_FAULTS"}
    env.update(
        CORRAL_HOME=str(root / "home"),
        XDG_CONFIG_HOME=str(root / "config"),
        CORRAL_SCRIPTS=str(root / "scripts"),
    )
    program_kill = "none"
    if kill.split(":")[0] in ("before", "after"):
        program_kill = kill
    elif kill != "none":
        env["CORRAL_FAULTS"] = kill
    return subprocess.run(
        [sys.executable, str(PROGRAM), str(root), str(AGENTS_PER_RUN), program_kill],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _chain(root: Path, seed: int) -> tuple[int, list[str]]:
    rng = random.Random(seed)
    for folder in ("work", "scripts", "config/corral"):
        (root / folder).mkdir(parents=True)
    script = {"steps": [{"text": "noted"}], "agents": {"*": [{"text": "agent result"}]}}
    (root / "scripts" / "crash.yaml").write_text(yaml.safe_dump(script))
    (root / "config" / "corral" / "settings.toml").write_text('default_model = "scripted/crash"\n')
    crashes, problems = 0, []
    for _ in range(CRASHES_PER_CHAIN):
        kill = f"{rng.choice(KILLS)}:{rng.randint(1, AGENTS_PER_RUN)}"
        done = _run(root, kill)
        if done.returncode == -signal.SIGKILL:
            crashes += 1
        elif done.returncode != 0:
            problems.append(f"{kill}: exit {done.returncode}: {done.stderr[-2000:]}")
    final = _run(root, "none")
    if final.returncode != 0 or "done" not in final.stdout:
        problems.append(f"final run failed: {final.returncode}: {final.stderr[-2000:]}")
    return crashes, problems


def _check(root: Path) -> None:
    session_id = (root / "lead.txt").read_text()
    (lead_path,) = (root / "home" / "sessions").rglob(f"*_{session_id}.jsonl")
    in_session = [
        entry["details"]["request_id"]
        for entry in map(json.loads, lead_path.read_text().splitlines())
        if entry.get("type") == "custom_message" and entry.get("customType") == RESULT_TYPE
    ]
    consumed = [line.split()[1] for line in (root / "consumed.log").read_text().splitlines()]
    with Repositories.open(root / "home" / "corral.db") as store:
        generations = store.kernel.generations(include_finalized=True)
        stored = {g.completed_request_id for g in generations if g.completed_request_id}
    assert stored, "no results were stored"
    assert len(in_session) == len(set(in_session)) == len(stored), "the lead's session holds each result once"
    assert set(in_session) == stored
    duplicated = {r for r in consumed if consumed.count(r) > 1}
    lost = stored - set(consumed)
    assert not duplicated and not lost, {"duplicated": duplicated, "lost": lost}


@pytest.mark.timeout(600)  # 53 program starts; about 100 s on an idle 2-core machine, more under load
def test_a_killed_program_resumes_from_its_cursor_exactly_once(tmp_path: Path) -> None:
    seed = random.randrange(1 << 30)
    with ThreadPoolExecutor(CHAINS) as pool:
        outcomes = list(pool.map(lambda i: _chain(tmp_path / f"chain{i}", seed + i), range(CHAINS)))
    problems = [p for _, found in outcomes for p in found]
    assert not problems, (seed, problems[:3])
    assert sum(crashes for crashes, _ in outcomes) >= 50, (seed, [c for c, _ in outcomes])
    for index in range(CHAINS):
        _check(tmp_path / f"chain{index}")
