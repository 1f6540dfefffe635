"""JSON-RPC 2.0 over an agent process's stdin and stdout: ACP's transport.

One message per line (UTF-8 JSON, no embedded newlines). `AcpConnection` starts the agent in a
process group of its own, sends requests and notifications, answers the agent's requests through
a handler, and hands the agent's notifications to a callback. `close` ends the agent's whole process
tree (SIGTERM to the group and every descendant, SIGKILL after a grace period): several agents leave
children holding stdout open when only the first process is killed.

corral speaks the protocol itself rather than through the `agent-client-protocol` SDK: the client side
is this module and a handful of methods, and owning the process start lets corral give the agent its
own process group, its full environment and a stderr file, which the SDK's `spawn_agent_process`
does not do by default.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from corral._held import HeldProcesses
from corral._process import process_tree

__all__ = ["AcpConnection", "AcpError"]

_log = logging.getLogger("corral.harness.acp")

_LINE_LIMIT = 64 * 1024 * 1024
_KILL_GRACE_S = 2.0

RequestHandler = Callable[[str, Mapping[str, Any]], Awaitable[object]]
"""`handler(method, params)`: the result of a request the agent sent (raise `AcpError` to refuse it)."""

NotificationHandler = Callable[[str, Mapping[str, Any]], None]
"""`on_notification(method, params)`: a notification the agent sent."""


class AcpError(Exception):
    """A JSON-RPC error: one the agent answered, or the connection's end.

    Args:
        message: What went wrong.
        code: The JSON-RPC error code (`-32603` when the connection ended).
    """

    def __init__(self, message: str, *, code: int = -32603) -> None:
        super().__init__(message)
        self.code = code


class AcpConnection:
    """A running ACP agent process and the JSON-RPC connection to it.

    Use `start`; then `request`/`notify`; `close` ends the process tree.
    """

    def __init__(
        self,
        process: asyncio.subprocess.Process,
        *,
        handler: RequestHandler,
        on_notification: NotificationHandler,
        stderr: IO[bytes] | None,
        held: tuple[HeldProcesses, Path | None] | None = None,
    ) -> None:
        self._process = process
        self._held = held
        """Where the agent's process group is recorded until it is ended (`corral._held`)."""
        self._handler = handler
        self._on_notification = on_notification
        self._stderr = stderr
        self._next_id = 0
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._handlers: set[asyncio.Task[None]] = set()
        self._closed = False
        self._ended: str | None = None
        self._reaper: asyncio.Task[None] | None = None
        """After `abandon`: waits for the killed agent and closes its pipes."""
        self._reader = asyncio.get_running_loop().create_task(self._read(), name="corral-acp-reader")

    @classmethod
    async def start(
        cls,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str] | None = None,
        stderr_path: Path | None = None,
        handler: RequestHandler,
        on_notification: NotificationHandler,
    ) -> AcpConnection:
        """Start the agent process in its own process group.

        Args:
            argv: The program and its arguments.
            cwd: Its working directory.
            env: Its environment (default: this process's).
            stderr_path: A file for its stderr (default: discarded).
            handler: Answers the agent's requests.
            on_notification: Receives the agent's notifications.

        Raises:
            OSError: The program could not be started (not found, not executable).
        """
        stderr = stderr_path.open("ab") if stderr_path is not None else None
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=stderr if stderr is not None else asyncio.subprocess.DEVNULL,
                cwd=cwd,
                env=dict(os.environ if env is None else env),
                start_new_session=True,
                limit=_LINE_LIMIT,
            )
        except BaseException:
            if stderr is not None:
                stderr.close()
            raise
        held = HeldProcesses()
        # recorded so that a later host ends it when this one dies before it could (`reap_orphans`)
        record = held.hold(process.pid, what=f"ACP agent {Path(argv[0]).name}")
        return cls(
            process, handler=handler, on_notification=on_notification, stderr=stderr, held=(held, record)
        )

    @property
    def pid(self) -> int:
        """The agent process's id (the leader of its process group)."""
        return self._process.pid

    @property
    def ended(self) -> str | None:
        """Why the connection ended (the process exited, its output was not JSON-RPC), or `None`."""
        return self._ended

    def request_future(self, method: str, params: Mapping[str, Any]) -> asyncio.Future[Any]:
        """Send a request; the future holds its result (or `AcpError`)."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if self._ended is not None:
            future.set_exception(AcpError(self._ended))
            return future
        self._next_id += 1
        self._pending[self._next_id] = future
        self._send({"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": dict(params)})
        return future

    async def request(self, method: str, params: Mapping[str, Any]) -> Any:
        """Send a request and return its result.

        Raises:
            AcpError: The agent answered with an error, or the connection ended first.
        """
        return await self.request_future(method, params)

    def notify(self, method: str, params: Mapping[str, Any]) -> None:
        """Send a notification (nothing when the connection has ended)."""
        if self._ended is None:
            self._send({"jsonrpc": "2.0", "method": method, "params": dict(params)})

    def _send(self, message: Mapping[str, Any]) -> None:
        stdin = self._process.stdin
        if stdin is None or stdin.is_closing():
            return
        line = json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n"
        stdin.write(line.encode())

    async def _read(self) -> None:
        stdout = self._process.stdout
        assert stdout is not None
        reason = "the agent process closed its output"
        try:
            while True:
                line = await stdout.readline()
                if not line:
                    break
                if not line.strip():
                    continue
                try:
                    message = json.loads(line)
                except ValueError:
                    _log.warning("an ACP agent wrote a line that is not JSON: %.200r", line)
                    continue
                if isinstance(message, dict):
                    self._dispatch(message)
        except (OSError, ValueError) as exc:  # a line over the limit, a broken pipe
            reason = f"the agent's output could not be read: {exc}"
        finally:
            code = self._process.returncode
            self._end(reason if code is None else f"the agent process exited with code {code}")

    def _dispatch(self, message: Mapping[str, Any]) -> None:
        method = message.get("method")
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        if isinstance(method, str):
            if "id" in message:
                task = asyncio.get_running_loop().create_task(self._answer(message["id"], method, params))
                self._handlers.add(task)
                task.add_done_callback(self._handlers.discard)
            else:
                try:
                    self._on_notification(method, params)
                except Exception:
                    _log.exception("the ACP notification handler failed on %s", method)
            return
        request_id = message.get("id")
        future = self._pending.pop(request_id, None) if isinstance(request_id, int) else None
        if future is None or future.done():
            return
        error = message.get("error")
        if isinstance(error, dict):
            code = error.get("code")
            future.set_exception(
                AcpError(str(error.get("message") or error), code=code if isinstance(code, int) else -32603)
            )
        else:
            future.set_result(message.get("result"))

    async def _answer(self, request_id: object, method: str, params: Mapping[str, Any]) -> None:
        try:
            result = await self._handler(method, params)
        except AcpError as exc:
            self._send({"jsonrpc": "2.0", "id": request_id, "error": {"code": exc.code, "message": str(exc)}})
            return
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            _log.exception("the ACP request handler failed on %s", method)
            self._send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32603, "message": str(exc)}})
            return
        self._send({"jsonrpc": "2.0", "id": request_id, "result": result})

    def _end(self, reason: str) -> None:
        if self._ended is not None:
            return
        self._ended = reason
        for future in self._pending.values():
            if not future.done():
                future.set_exception(AcpError(reason))
        self._pending.clear()

    async def close(self) -> None:
        """End the agent's process tree (SIGTERM, SIGKILL after a grace period) and the connection."""
        if self._closed:
            return
        self._closed = True
        tree = process_tree(self._process.pid)  # before the leader dies and its children move to init
        self.kill(signal.SIGTERM, tree)
        try:
            await asyncio.wait_for(asyncio.shield(self._process.wait()), _KILL_GRACE_S)
        except TimeoutError:
            pass
        finally:
            self.kill(signal.SIGKILL, tree)
            self._finish()
        await self._reap()

    def kill(self, sig: int = signal.SIGKILL, tree: Sequence[int] | None = None) -> None:
        """Send `sig` to the agent's process group and to each process of `tree` (default: its
        descendants now); synchronous."""
        pids = process_tree(self._process.pid) if tree is None else tree
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._process.pid, sig)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)

    def abandon(self) -> asyncio.Task[None] | None:
        """End the agent's process tree at once (SIGKILL) and the connection; synchronous. The process
        is reaped and its pipes closed by a task on the running loop, when there is one: returned, so
        a caller that can wait awaits it (pipes left open meet the garbage collector later)."""
        self._closed = True
        self.kill(signal.SIGKILL)
        self._finish()
        if self._reaper is None:
            with contextlib.suppress(RuntimeError):  # no running loop: nothing left to wait with
                self._reaper = asyncio.get_running_loop().create_task(self._reap(), name="corral-acp-reap")
        return self._reaper

    async def _reap(self) -> None:
        """Wait for the killed agent to exit, then close its pipes: a pipe left open is closed by
        the garbage collector later, a `ResourceWarning` in whatever runs then."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._process.wait(), _KILL_GRACE_S)
        if self._process.returncode is not None:
            # asyncio's `Process` has no public close; its transport closes the pipes (and, with
            # the process reaped already, touches nothing else)
            transport = getattr(self._process, "_transport", None)
            if transport is not None:
                transport.close()

    def _finish(self) -> None:
        self._end("the ACP connection was closed")
        self._closed = True
        if self._held is not None:  # its group was ended (`close`, `abandon`): nothing left to reap
            held, record = self._held
            held.release(record)
            self._held = None
        for task in tuple(self._handlers):
            task.cancel()
        self._reader.cancel()
        stdin = self._process.stdin
        if stdin is not None:
            with contextlib.suppress(Exception):
                stdin.close()
        if self._stderr is not None:
            self._stderr.close()
