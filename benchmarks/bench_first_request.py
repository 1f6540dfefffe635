"""Process start → the first model request: `corral run -p hi` against a local Chat Completions
(default) or Responses (`--api openai-responses`) server.

Each sample starts a fresh `corral run --model local/bench --no-session -p hi` whose custom provider
(`[providers.local]`, `api = "openai-chat"` or `"openai-responses"`, as docs/settings.md "Local
models") points at the fake server of `tests/llm/fake_server.py`, run in this process on loopback
with zero latency. When the
request arrives, the server's thread reads the child's CPU time so far (user + system, every
thread's, from `/proc/<pid>/stat`: 10 ms ticks) and the wall time since the child was spawned; the
process then finishes its run.

One more run, in a Python wrapper with an audit hook, counts the modules loaded when the first
request connects (and whether pydantic-ai or an SDK is among them).

Prints one JSON object: CPU and wall milliseconds to the first request (p50 and spread), the modules
loaded then, the load average before and after, and the environment. Target: ≤ 300 ms of wall time at p50 (issue 30).
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
api = "{api}"
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


MODULES = """\
import sys
seen = []
SDK = ("pydantic_ai", "openai", "anthropic", "pydantic_graph", "griffe")
def connecting(event, args):
    if event == "socket.connect" and not seen:
        seen.append((len(sys.modules), sorted({m.split(".")[0] for m in sys.modules} & set(SDK))))
sys.addaudithook(connecting)
from corral.cli import main
code = main(["run", "--model", "local/bench", "--no-session", "-p", "hi"])
print("MODULES", seen[0][0], ",".join(seen[0][1]) or "-")
raise SystemExit(code)
"""


def modules_at_first_request(env: dict[str, str], cwd: Path) -> dict[str, object]:
    """How many modules a run has loaded when its first request connects, and which SDKs among them."""
    done = subprocess.run(
        [sys.executable, "-c", MODULES], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )
    line = next((line for line in done.stdout.splitlines() if line.startswith("MODULES ")), None)
    if done.returncode != 0 or line is None:
        raise SystemExit(f"module count failed ({done.returncode}): {done.stderr[-500:]}")
    _, count, sdks = line.split(" ")
    return {"count": int(count), "sdk_packages": [] if sdks == "-" else sdks.split(",")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15, help="samples (default 15)")
    parser.add_argument(
        "--api",
        choices=("openai-chat", "openai-responses"),
        default="openai-chat",
        help="the wire API of the local provider (default openai-chat)",
    )
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
                SETTINGS.format(base_url=server.base_url, api=args.api)
            )
            sample(cmd, env, project, server)  # warm the OS file cache, not Python
            cpu, wall = [], []
            for _ in range(args.runs):
                c, w = sample(cmd, env, project, server)
                cpu.append(c)
                wall.append(w)
            server.responder = None
            modules = modules_at_first_request(env, project)
        result = {
            "benchmark": "first_request",
            "api": args.api,
            "cpu_to_first_request": summary_ms(cpu),
            "wall_to_first_request": summary_ms(wall),
            "modules_at_first_request": modules,
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
