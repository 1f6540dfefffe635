"""A test client for `corral run --mode rpc`: raw lines in, every output line parsed strictly.

Output is read in a thread into a queue, so a wait has a timeout instead of
blocking forever on a silent process. Every line must be UTF-8 JSON without
`NaN`/`Infinity` (what a JavaScript client can parse).
"""

from __future__ import annotations

import json
import queue
import subprocess
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.e2e.conftest import CORRAL, Env

WAIT_SECONDS = 30.0


def _no_constants(name: str) -> Any:
    raise AssertionError(f"corral printed {name}, which is not JSON")


def strict_json(raw: bytes) -> Any:
    """Parse one output line as a JavaScript client would: UTF-8, no NaN/Infinity."""
    return json.loads(raw.decode("utf-8"), parse_constant=_no_constants)


class RpcProcess:
    """A running `corral run --mode rpc` with a line queue over its stdout."""

    def __init__(self, env: Env, *args: str, cwd: Path | None = None) -> None:
        # A file, not a pipe: a chatty stderr never blocks corral. Closed in `kill`.
        self._stderr = tempfile.TemporaryFile(dir=env.root)  # noqa: SIM115
        self.proc = subprocess.Popen(
            [CORRAL, "run", "--mode", "rpc", *args],
            cwd=cwd or env.project,
            env=env.vars,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
        )
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.seen: list[Any] = []
        self._next_id = 0
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            self.lines.put(raw)
        self.lines.put(None)

    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, command: dict[str, Any]) -> None:
        self.send_raw(json.dumps(command).encode() + b"\n")

    def read_until(self, predicate: Callable[[Any], bool], *, timeout: float = WAIT_SECONDS) -> Any:
        while True:
            try:
                raw = self.lines.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError(f"no matching line within {timeout} s; seen: {self.seen[-5:]}") from None
            if raw is None:
                raise AssertionError(f"corral ended early (code {self.proc.wait()}): {self.stderr()}")
            obj = strict_json(raw)
            self.seen.append(obj)
            if predicate(obj):
                return obj

    def request(self, command: dict[str, Any], *, timeout: float = WAIT_SECONDS) -> dict[str, Any]:
        """Send `command` with a fresh id and return its response."""
        self._next_id += 1
        request_id = f"t{self._next_id}"
        self.send({**command, "id": request_id})
        return self.read_until(
            lambda o: o.get("type") == "response" and o.get("id") == request_id, timeout=timeout
        )

    def ok(self, command: dict[str, Any], *, timeout: float = WAIT_SECONDS) -> Any:
        """Send `command`, assert it succeeded, return its `data`."""
        response = self.request(command, timeout=timeout)
        assert response["success"] is True, response
        assert response["command"] == command["type"]
        return response.get("data")

    def prompt_and_settle(self, message: str) -> None:
        self.ok({"type": "prompt", "message": message})
        self.read_until(lambda o: o.get("type") == "agent_settled")

    def stderr(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", "replace")

    def close(self, *, timeout: float = WAIT_SECONDS) -> int:
        """Close stdin and return the exit code."""
        assert self.proc.stdin is not None
        if not self.proc.stdin.closed:
            self.proc.stdin.close()
        return self.proc.wait(timeout=timeout)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None and not stream.closed:
                stream.close()
        self._stderr.close()
