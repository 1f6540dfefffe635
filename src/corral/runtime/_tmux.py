"""The tmux runtime: each managed agent is a worker process in a pane of a private tmux server.

The server listens on its own socket under the data root
(`corral_home()/tmux/default`, directory `0700`); the user's own tmux server
is never touched. There is one tmux session per workspace and one window (a
single pane) per generation, titled with the agent's label. Every tmux call
is `asyncio.create_subprocess_exec("tmux", "-S", socket, ...)`, never a shell.

Panes keep running when the host process goes away; a later host re-adopts
them from the store (`adopt`). Identity is the pane id plus the pid of the
process the pane runs (the worker): a pane is only killed once both match.

The protocol's observation methods are synchronous, so they answer from the
last inventory (`refresh`, one `list-panes -a`) and capture
(`prepare_evidence`); a failed inventory makes presence `unknown`, never
`lost`. A worker also touches a heartbeat file (`heartbeat_path`) about once
a second; a live pane whose heartbeat is older than `HEARTBEAT_STALE_S`
is `unknown`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from corral._paths import corral_home, ensure_private_dir
from corral._process import children_by_parent, pid_alive
from corral.runtime._base import (
    LaunchSpec,
    PresenceVerdict,
    ProcessEvidence,
    RecentOutput,
    RuntimeError_,
    RuntimeHandle,
)
from corral.runtime._inprocess import bound_output

__all__ = [
    "HEARTBEAT_STALE_S",
    "PaneInfo",
    "PaneNotReady",
    "RollbackFailed",
    "TmuxRuntime",
    "default_socket",
]

HEARTBEAT_STALE_S = 15.0
"""A live pane whose worker heartbeat is older than this has `unknown` presence."""
_DIAGNOSTIC_LINES = 40
_DIAGNOSTIC_BYTES = 4096
_MAX_PROCESSES = 8
_STOP_WAIT_S = 5.0
_POLL_S = 0.02
_START_ATTEMPTS = 4
_FORMAT = "#{pane_id}\t#{pane_pid}\t#{pane_dead}\t#{session_name}"


def default_socket() -> Path:
    """The private server's socket: `corral_home()/tmux/default` (its directory is made `0700`)."""
    return ensure_private_dir(corral_home() / "tmux") / "default"


class PaneNotReady(RuntimeError_):
    """A worker did not become ready in time; `diagnostic` is the pane's last lines."""

    def __init__(self, message: str, diagnostic: str) -> None:
        super().__init__(message)
        self.diagnostic = diagnostic


class RollbackFailed(RuntimeError_):
    """A start failed and killing its pane failed too; carries both errors."""

    def __init__(self, primary: BaseException, cleanup: BaseException) -> None:
        super().__init__(f"{primary}; cleanup also failed: {cleanup}")
        self.primary = primary
        self.cleanup = cleanup


@dataclass(frozen=True, slots=True)
class _Pane:
    pid: int
    dead: bool
    session: str


@dataclass(frozen=True, slots=True)
class PaneInfo:
    """One pane of the private server (for orphan reports)."""

    pane_id: str
    pid: int
    dead: bool
    title: str
    """The window name (corral names each agent's window with its label)."""
    session: str


def _workspace_name(cwd: Path) -> str:
    name = re.sub(r"[^A-Za-z0-9_-]+", "-", cwd.name or "root").strip("-") or "root"
    return f"{name[:40]}-{hashlib.sha1(str(cwd).encode()).hexdigest()[:6]}"


def _read_proc(pid: int, name: str) -> bytes | None:
    try:
        return Path(f"/proc/{pid}/{name}").read_bytes()
    except OSError:
        return None


def _evidence(pid: int) -> ProcessEvidence | None:
    raw = _read_proc(pid, "cmdline")
    if raw is None:
        return None
    parts = [part.decode(errors="replace") for part in raw.split(b"\0") if part]
    argv0 = (parts[0] if parts else "").encode()[:256].decode(errors="ignore")
    cmdline = " ".join(parts).encode()[:4096].decode(errors="ignore")
    return ProcessEvidence(pid=pid, argv0=argv0, cmdline=cmdline)


class TmuxRuntime:
    """Runs each managed agent as a worker process in a pane of a private tmux server.

    Args:
        socket: The server's socket (default `default_socket()`).
        tmux: The tmux program.
    """

    kind = "tmux"

    def __init__(self, *, socket: Path | None = None, tmux: str = "tmux") -> None:
        self.socket = socket if socket is not None else default_socket()
        ensure_private_dir(self.socket.parent)
        self.tmux = tmux
        self._pids: dict[str, int] = {}
        self._inventory: dict[str, _Pane] | None = None
        self._captures: dict[str, RecentOutput] = {}
        self._processes: dict[str, list[ProcessEvidence]] = {}
        self._heartbeats: dict[str, Path] = {}

    # --- tmux ---------------------------------------------------------------------------------

    async def _run(self, *args: str) -> tuple[int, str, str]:
        try:
            process = await asyncio.create_subprocess_exec(
                self.tmux,
                "-f",
                "/dev/null",
                "-S",
                str(self.socket),
                *args,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
        except OSError as exc:
            return 127, "", f"cannot run {self.tmux}: {exc}"
        try:
            out, err = await process.communicate()
        except asyncio.CancelledError:
            # A cancelled caller must not leave the tmux client (and its pipes) behind.
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await asyncio.shield(process.wait())
            raise
        code = process.returncode if process.returncode is not None else 1
        return code, out.decode(errors="replace"), err.decode(errors="replace").strip()

    async def _check(self, *args: str) -> str:
        code, out, err = await self._run(*args)
        if code != 0:
            raise RuntimeError_(f"tmux {args[0]} failed ({code}): {err or 'no output'}")
        return out

    @property
    def launch_dir(self) -> Path:
        """The server's private directory (launch files go to its `launch/`)."""
        return self.socket.parent

    def heartbeat_path(self, run_id: str) -> Path:
        """Where the worker of `run_id` touches its heartbeat."""
        return ensure_private_dir(self.socket.parent / "heartbeat") / run_id

    # --- start ----------------------------------------------------------------------------------

    async def start(self, spec: LaunchSpec) -> RuntimeHandle:
        """Open a pane (a new window of the workspace's session) running `spec.argv`.

        Raises:
            RuntimeError_: No argv, or tmux failed.
        """
        if not spec.argv:
            raise RuntimeError_(f"the tmux runtime needs a worker command line for agent {spec.label}")
        session = _workspace_name(spec.cwd)
        env: list[str] = []
        for key, value in sorted(spec.env.items()):
            env += ["-e", f"{key}={value}"]
        common = ["-P", "-F", "#{pane_id}\t#{pane_pid}", "-c", str(spec.cwd), *env]
        # A failed worker leaves its pane for the diagnostic; a clean exit closes it. The option
        # is set in the same command queue, before the pane exists, so no exit can race it.
        keep = ("set-option", "-g", "remain-on-exit", "failed", ";")
        new_session = ("new-session", "-d", "-s", session, "-n", spec.label, "-x", "160", "-y", "50")
        new_window = ("new-window", "-d", "-t", f"={session}:", "-n", spec.label)
        out = ""
        error: RuntimeError_ | None = None
        for _attempt in range(_START_ATTEMPTS):
            # The workspace session (or the whole server) may end between the check and the
            # command when its last agent exits; then the other form is tried again.
            code, _, _ = await self._run("has-session", "-t", f"={session}")
            create = new_window if code == 0 else new_session
            try:
                out = await self._check(*keep, *create, *common, *spec.argv)
            except RuntimeError_ as exc:
                error = exc
                continue
            error = None
            break
        if error is not None:
            raise error
        try:
            pane_id, pid_text = out.strip().split("\t")
            pid = int(pid_text)
        except ValueError:
            raise RuntimeError_(f"tmux reported no pane for agent {spec.label}: {out!r}") from None
        self._pids[pane_id] = pid
        self._heartbeats[pane_id] = self.heartbeat_path(spec.run_id)
        await self._run("select-pane", "-t", pane_id, "-T", spec.label)
        return RuntimeHandle(runtime_id=pane_id, kind=self.kind, run_id=spec.run_id)

    def adopt(self, handle: RuntimeHandle, pid: int | None) -> None:
        """Take over a pane started by an earlier host (identity: its pane id and worker pid)."""
        if pid is not None:
            self._pids[handle.runtime_id] = pid
        self._heartbeats[handle.runtime_id] = self.heartbeat_path(handle.run_id)

    def expected_pid(self, handle: RuntimeHandle) -> int | None:
        """The pid the pane is proven to run (from start or adoption)."""
        return self._pids.get(handle.runtime_id)

    async def wait_ready(self, handle: RuntimeHandle, ready: Callable[[], bool], *, timeout: float) -> None:
        """Wait until `ready()`; on timeout (or an early exit) roll the pane back and raise.

        Raises:
            PaneNotReady: Not ready in time; the pane was killed after its identity was proven.
            RollbackFailed: Not ready, and the pane could not be removed.
        """
        deadline = time.monotonic() + timeout
        exited = False
        while not ready():
            if time.monotonic() >= deadline:
                break
            await self.refresh()
            pane = (self._inventory or {}).get(handle.runtime_id)
            if self._inventory is not None and (pane is None or pane.dead):
                exited = True
                if ready():
                    return
                break
            await asyncio.sleep(_POLL_S)
        else:
            return
        capture = await self.capture(handle, lines=_DIAGNOSTIC_LINES, max_bytes=_DIAGNOSTIC_BYTES)
        reason = "exited before it was ready" if exited else f"was not ready within {timeout:g} s"
        primary = PaneNotReady(f"worker in pane {handle.runtime_id} {reason}", capture.text)
        try:
            await self.stop(handle)
        except RuntimeError_ as exc:
            raise RollbackFailed(primary, exc) from None
        raise primary

    # --- observation ------------------------------------------------------------------------------

    async def refresh(self) -> bool:
        """Re-read the pane inventory (`list-panes -a`); `False` (and presence `unknown`) on failure."""
        code, out, err = await self._run("list-panes", "-a", "-F", _FORMAT)
        if code != 0:
            server_absent = "no server running" in err or (
                "error connecting" in err and "No such file or directory" in err
            )
            if code != 127 and server_absent:
                self._inventory = {}  # the server is proven absent: so are its panes
                return True
            self._inventory = None
            return False
        inventory: dict[str, _Pane] = {}
        for line in out.splitlines():
            parts = line.split("\t")
            if len(parts) != 4 or not parts[1].isdigit():
                continue
            inventory[parts[0]] = _Pane(pid=int(parts[1]), dead=parts[2] == "1", session=parts[3])
        self._inventory = inventory
        return True

    def presence(self, handle: RuntimeHandle) -> PresenceVerdict:
        """From the last inventory plus the worker's pid and heartbeat."""
        if self._inventory is None:
            return "unknown"
        pane = self._inventory.get(handle.runtime_id)
        expected = self._pids.get(handle.runtime_id)
        if pane is None or pane.dead:
            return "lost"
        if expected is not None and pane.pid != expected:
            return "lost"  # the pane id now names another process: ours is gone
        if not pid_alive(pane.pid):
            return "lost"
        heartbeat = self._heartbeats.get(handle.runtime_id)
        if heartbeat is not None:
            try:
                age = time.time() - heartbeat.stat().st_mtime
            except OSError:
                return "live"  # not written yet (starting)
            if age > HEARTBEAT_STALE_S:
                return "unknown"
        return "live"

    async def capture(
        self, handle: RuntimeHandle, *, lines: int = 80, max_bytes: int = 16384
    ) -> RecentOutput:
        """The pane's last `lines` lines (`capture-pane -p -J`), tail-bounded to `max_bytes`.

        Runs of blank rows (an unused screen) collapse into one blank line.
        """
        code, out, _ = await self._run(
            "capture-pane", "-p", "-J", "-t", handle.runtime_id, "-S", f"-{max(lines, 1) * 4}"
        )
        if code != 0:
            return RecentOutput(text="", truncated=False)
        text_lines: list[str] = []
        for line in out.splitlines():
            line = line.rstrip()
            if line or (text_lines and text_lines[-1]):
                text_lines.append(line)  # runs of blank screen rows collapse to one
        while text_lines and not text_lines[-1]:
            text_lines.pop()
        return bound_output(text_lines, max_lines=lines, max_bytes=max_bytes)

    def _process_tree(self, pid: int) -> list[ProcessEvidence]:
        tree = children_by_parent()
        found: list[ProcessEvidence] = []
        frontier = [pid]
        while frontier and len(found) < _MAX_PROCESSES:
            current = frontier.pop(0)
            evidence = _evidence(current)
            if evidence is not None:
                found.append(evidence)
            frontier.extend(sorted(tree.get(current, [])))
        return found

    async def prepare_evidence(self, handle: RuntimeHandle) -> None:
        """Capture the pane and its processes, then re-check identity with a fresh inventory."""
        output = await self.capture(handle)
        pid = self._pids.get(handle.runtime_id)
        processes = await asyncio.to_thread(self._process_tree, pid) if pid is not None else []
        self._captures[handle.runtime_id] = output
        self._processes[handle.runtime_id] = processes
        await self.refresh()

    def recent_output(
        self, handle: RuntimeHandle, *, lines: int = 80, max_bytes: int = 16384
    ) -> RecentOutput:
        """The capture taken by the last `prepare_evidence`, re-bounded."""
        captured = self._captures.get(handle.runtime_id)
        if captured is None:
            return RecentOutput(text="", truncated=False)
        bounded = bound_output(captured.text.splitlines(), max_lines=lines, max_bytes=max_bytes)
        return RecentOutput(text=bounded.text, truncated=bounded.truncated or captured.truncated)

    def process_evidence(self, handle: RuntimeHandle) -> list[ProcessEvidence]:
        """The pane's processes (the worker and its descendants, at most 8) from the last capture."""
        return list(self._processes.get(handle.runtime_id, []))[:_MAX_PROCESSES]

    # --- stop ---------------------------------------------------------------------------------------

    async def stop(self, handle: RuntimeHandle) -> None:
        """Prove the pane (id + pid), kill it, and wait until both pane and process are gone.

        Raises:
            RuntimeError_: The inventory failed, the pane runs another process, or it did not go away.
        """
        if not await self.refresh():
            raise RuntimeError_(f"cannot list tmux panes to stop {handle.runtime_id}")
        assert self._inventory is not None
        pane = self._inventory.get(handle.runtime_id)
        expected = self._pids.get(handle.runtime_id)
        if pane is not None:
            if expected is not None and pane.pid != expected:
                raise RuntimeError_(
                    f"pane {handle.runtime_id} runs pid {pane.pid}, not the agent's {expected}; not killing it"
                )
            code, _, err = await self._run("kill-pane", "-t", handle.runtime_id)
            if code != 0 and "can't find" not in err:
                raise RuntimeError_(f"tmux kill-pane {handle.runtime_id} failed: {err}")
        deadline = time.monotonic() + _STOP_WAIT_S
        while True:
            await self.refresh()
            pane_gone = self._inventory is not None and handle.runtime_id not in self._inventory
            process_gone = expected is None or not pid_alive(expected)
            if pane_gone and process_gone:
                break
            if time.monotonic() >= deadline:
                raise RuntimeError_(f"pane {handle.runtime_id} or its process is still present after kill")
            await asyncio.sleep(_POLL_S)
        self.forget(handle)

    def forget(self, handle: RuntimeHandle) -> None:
        """Drop cached evidence of a finished pane (the identity is kept for presence checks)."""
        self._captures.pop(handle.runtime_id, None)
        self._processes.pop(handle.runtime_id, None)

    async def stop_all(self) -> None:
        """Nothing: tmux agents outlive their host."""

    async def panes(self) -> list[PaneInfo] | None:
        """Every pane of the private server (`[]` when no server runs; `None` when tmux failed)."""
        if not await self.refresh() or self._inventory is None:
            return None
        code, out, _ = await self._run("list-panes", "-a", "-F", "#{pane_id}\t#{window_name}")
        titles = dict(line.split("\t", 1) for line in out.splitlines() if "\t" in line) if code == 0 else {}
        return [
            PaneInfo(pane_id, pane.pid, pane.dead, titles.get(pane_id, ""), pane.session)
            for pane_id, pane in sorted(self._inventory.items())
        ]

    def pane_running(self, panes: Sequence[PaneInfo], argv_fragment: Sequence[str]) -> PaneInfo | None:
        """The live pane of `panes` whose process, or a process below it, has `argv_fragment` in its argv.

        This finds a worker whose pane was never recorded because its host died right after
        starting it; the pane id alone proves nothing then, the command line does. `panes` is
        one inventory (`panes()`), so several lookups cost one tmux call.
        """
        wanted = b"\0" + b"\0".join(part.encode() for part in argv_fragment) + b"\0"
        children: dict[int, list[int]] | None = None
        for pane in panes:
            if pane.dead:
                continue
            pending = [pane.pid]
            while pending:
                pid = pending.pop()
                raw = _read_proc(pid, "cmdline")
                if raw is not None and wanted in b"\0" + raw:
                    return pane
                if children is None:
                    children = children_by_parent()
                pending.extend(children.get(pid, []))
        return None

    async def kill_pane(self, pane: PaneInfo) -> None:
        """Kill `pane` after proving it still runs `pane.pid`; wait until it is gone.

        Raises:
            RuntimeError_: See `stop`.
        """
        handle = RuntimeHandle(runtime_id=pane.pane_id, kind=self.kind, run_id="")
        self._pids[pane.pane_id] = pane.pid
        await self.stop(handle)

    async def kill_server(self) -> None:
        """Kill the private server (tests, `corral agents reap --all`)."""
        await self._run("kill-server")
