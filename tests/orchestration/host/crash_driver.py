"""Crash-test driver: a lead that delegates N agents on a scripted model, resumable after SIGKILL.

Usage: `python crash_driver.py <dir> <n>`. The lead's session path is kept in
`<dir>/lead.txt`; a restarted driver resumes that session (→ restart recovery),
delegates whatever is still missing, waits until the lead is quiet and prints
`done`. `CORRAL_FAULTS` (read by `corral.orchestration.kernel._faults`) kills it at
injected points.

`python crash_driver.py --serve` is the same driver behind a fork server, for the crash test's
hundred-odd runs: it imports corral once, then reads one request a line from stdin,
`<dir> <n> <faults or -> <stdout file> <stderr file>`, forks a child that arms those faults and runs
`main` (a fresh host, store and session in a process of its own, killed for real at its fault
point), and writes the child's exit code (negative: the signal that ended it) as one line. Each
run then costs a fork instead of a Python start-up and the import of corral, which is nearly all of
a run's CPU time.
"""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import sys
import traceback
from pathlib import Path

from corral.agent import AgentSession
from corral.lead._host import ComposedHost
from corral.llm import ModelRegistry
from corral.orchestration import Repositories, load_roster
from corral.orchestration.kernel import _faults
from corral.orchestration.surfaces import DelegateParams
from corral.session import SessionManager
from corral.settings import Settings


async def main(root: Path, count: int) -> None:
    work = root / "work"
    work.mkdir(exist_ok=True)
    sessions = root / "sessions"
    marker = root / "lead.txt"
    if marker.exists():
        session = SessionManager.open(Path(marker.read_text()))
    else:
        session = SessionManager.create(work, sessions_root=sessions)
        session.flush()
        assert session.path is not None
        marker.write_text(str(session.path))
    registry = ModelRegistry(Settings(), cwd=work)
    model = registry.create_model(registry.resolve("scripted/crash"), cwd=work)
    lead = AgentSession(session=session, model=model, thinking_level="off", tools=[], cwd=work)
    store = Repositories.open(root / "home" / "corral.db")
    host = ComposedHost(
        repositories=store,
        registry=registry,
        sessions_root=sessions,
        roster_loader=lambda cwd: load_roster(cwd, user_dir=root / "none", trust=False),
    )
    caller = await host.attach_lead(lead, surfaces=())
    started = len(store.kernel.generations(owner_session_id=caller.session_id, include_finalized=True))
    for index in range(started, count):
        await host.controller.delegate(caller, DelegateParams(definition="scout", task=f"task {index}"))
    await asyncio.wait_for(host.wait_until_quiet(caller.session_id), 60)
    await host.aclose()
    session.close()
    print("done")


RUN_TIMEOUT_S = 60
"""A run that neither finishes nor dies at its fault point by then is ended by SIGALRM."""


def _child(root: Path, count: int, faults: str, out: Path, err: Path) -> None:
    code = 1
    try:
        for fd, path in ((1, out), (2, err)):
            os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), fd)
        # `_faults` read CORRAL_FAULTS (unset here) when the server imported it: arm this run's points.
        _faults._ARMED.clear()
        _faults._ARMED.update(_faults._parse(faults))
        signal.alarm(RUN_TIMEOUT_S)
        asyncio.run(main(root, count))
        code = 0
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def serve() -> None:
    """Fork one run per request line on stdin; answer each with the run's exit code."""
    gc.freeze()  # the imported modules stay shared with each child (no copy-on-write by the collector)
    for line in sys.stdin:
        root, count, faults, out, err = line.split()
        pid = os.fork()
        if pid == 0:
            _child(Path(root), int(count), "" if faults == "-" else faults, Path(out), Path(err))
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status), flush=True)


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        serve()
    else:
        asyncio.run(main(Path(sys.argv[1]), int(sys.argv[2])))
