"""What the read agents' sandbox costs per `bash` call.

Runs `true` through the `bash` tool `--runs` times each way: unconfined (write agents and the
lead), in today's sandbox (the built file-system view, seccomp filter, limits launcher and, as
root, a pids cgroup), and through the previous command line (`bwrap --ro-bind / / …`, no
launcher) for comparison. Needs a working bubblewrap; without one it prints the probe's reason.

Prints one JSON object: per-call summaries in ms for each way, and the environment.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import environment, summary_ms

from corral.agent.tools import BashTool, ReadOnlySandbox, SandboxCommand


class _Legacy(ReadOnlySandbox):
    """The sandbox's command line before the built view: the whole root bound read-only."""

    def __init__(self, scratch: Path) -> None:
        super().__init__()
        self.scratch = str(scratch)

    def prepare(self, argv: list[str], cwd: Path) -> SandboxCommand:
        flags = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", self.scratch]
        flags += ["--chdir", str(cwd), "--setenv", "TMPDIR", self.scratch]
        flags += ["--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
        flags += ["--unshare-cgroup-try", "--unshare-user-try", "--cap-drop", "ALL", "--die-with-parent"]
        return SandboxCommand([self.bwrap or "bwrap", *flags, "--new-session", "--", *argv], dict(os.environ))


async def _time(tool: BashTool, runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        await tool.execute("bench", {"command": "true"})
        samples.append(time.perf_counter() - start)
    return samples


async def main(runs: int) -> dict[str, Any]:
    result: dict[str, Any] = {"runs": runs}
    sandbox = ReadOnlySandbox()
    status = await sandbox.probe()
    project = Path(tempfile.mkdtemp(prefix="corral-bench-sandbox-"))
    try:
        result["unconfined"] = summary_ms(await _time(BashTool(project), runs))
        if not status.ok:
            result["sandbox"] = {"error": status.reason}
        else:
            result["sandbox"] = summary_ms(await _time(BashTool(project, sandbox=sandbox), runs))
            scratch = Path(tempfile.mkdtemp(prefix="corral-bench-scratch-"))
            try:
                legacy = BashTool(project, sandbox=_Legacy(scratch))
                result["legacy_ro_bind_root"] = summary_ms(await _time(legacy, runs))
            finally:
                scratch.rmdir()
    finally:
        shutil.rmtree(project, ignore_errors=True)
    result["environment"] = environment("bench_sandbox.py")
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(args.runs)), indent=2))
    sys.exit(0)
