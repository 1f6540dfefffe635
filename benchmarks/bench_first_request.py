"""Process start → the first model request: `corral run -p hi` against a local Chat Completions server.

Each sample starts a fresh `corral run --model local/bench --no-session -p hi` whose custom provider
(`[providers.local]`, `api = "openai-chat"`, as docs/settings.md "Local models") points at the fake
server of `tests/llm/fake_server.py`, run in this process on loopback with zero latency. When the
request arrives, the server's thread reads the child's CPU time so far (user + system, every
thread's, from `/proc/<pid>/stat`: 10 ms ticks) and the wall time since the child was spawned; the
process then finishes its run.

Prints one JSON object: CPU and wall milliseconds to the first request (p50 and spread), the load
average before and after, and the environment. Target: ≤ 300 ms of wall time at p50 (issue 30).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from _common import corral_command, environment, summary_ms

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.llm.fake_server import FakeProviderServer, FakeReply, RecordedRequest

SETTINGS = """\
[providers.local]
base_url = "{base_url}"
api = "openai-chat"
max_tokens_field = "max_tokens"

[[providers.local.models]]
id = "bench"
context_window = 8192
max_tokens = 256
"""


def cpu_seconds(pid: int) -> float:
    """The process's user + system CPU time so far, every thread's, the exited ones' too (clock ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class _Probe:
    """What the server saw when the child's first request arrived."""

    def __init__(self) -> None:
        self.pid = 0
        self.started = 0.0
        self.cpu: float | None = None
        self.wall: float | None = None
        self.arrived = threading.Event()

    def __call__(self, request: RecordedRequest) -> FakeReply | None:
        if self.cpu is None:
            self.wall = time.perf_counter() - self.started
            self.cpu = cpu_seconds(self.pid)
            self.arrived.set()
        return None


def sample(cmd: list[str], env: dict[str, str], cwd: Path, server: FakeProviderServer) -> tuple[float, float]:
    probe = _Probe()
    server.responder = probe
    probe.started = time.perf_counter()
    child = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    probe.pid = child.pid
    out, err = child.communicate(timeout=120)
    if child.returncode != 0 or probe.cpu is None or probe.wall is None:
        raise SystemExit(f"{cmd} failed ({child.returncode}): {err.decode()[-500:]}")
    if b"ok" not in out:
        raise SystemExit(f"unexpected output: {out.decode()[-200:]}")
    return probe.cpu, probe.wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15, help="samples (default 15)")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="corral-bench-first-request-"))
    load_before = [round(x, 2) for x in os.getloadavg()]
    try:
        project = root / "project"
        project.mkdir()
        (root / "config" / "corral").mkdir(parents=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CORRAL_", "XDG_"))}
        env.update(CORRAL_HOME=str(root / "home"), XDG_CONFIG_HOME=str(root / "config"))
        cmd = [*corral_command(), "run", "--model", "local/bench", "--no-session", "-p", "hi"]
        with FakeProviderServer() as server:
            server.default_reply = FakeReply(text="ok")
            (root / "config" / "corral" / "settings.toml").write_text(
                SETTINGS.format(base_url=server.base_url)
            )
            sample(cmd, env, project, server)  # warm the OS file cache, not Python
            cpu, wall = [], []
            for _ in range(args.runs):
                c, w = sample(cmd, env, project, server)
                cpu.append(c)
                wall.append(w)
        result = {
            "benchmark": "first_request",
            "cpu_to_first_request": summary_ms(cpu),
            "wall_to_first_request": summary_ms(wall),
            "targets_ms": {"wall_to_first_request_p50": 300},
            "load_average": {"before": load_before, "after": [round(x, 2) for x in os.getloadavg()]},
            "env": environment("benchmarks/bench_first_request.py"),
        }
        print(json.dumps(result, indent=2))
        return 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
