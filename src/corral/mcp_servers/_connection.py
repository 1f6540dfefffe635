"""One MCP server's client session in this process: started on first use, restarted once after a crash.

A `ServerConnection` holds one `mcp.Client` (the official SDK, `mode="auto"`: the 2026-07-28
`server/discover` era and the `initialize` handshake alike) for every agent of its host process.
The client lives in a task of its own (`_hold`), since the SDK's transports must be entered and left
in one task; calls come from the agents' tool tasks.

* **Start**: the first `start()` spawns a stdio server (its program wrapped by `setpriv --pdeathsig
  TERM` and a shell that passes that signal to the server's process group, where `setpriv` exists,
  so the server and any process it started end with this process even when the process is killed;
  its stdin closes then too) or connects to an HTTP one, and lists its tools, within `startup_timeout_s`. Its
  stderr goes to `<data root>/mcp-servers/<name>.log`. A start that fails is final for this process:
  the problem names the reason (and the server's last stderr line).
* **Crash**: the transport's end of stream marks the server gone. A call that finds it gone before
  it was sent restarts it (once per process) and goes on; a call it was in fails with a clear error
  (its effect is unknown), after the restart. A second crash is final: every later call of its tools
  fails, saying so.
* **Calls** time out after `tool_timeout_s`.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import importlib.util
import os
import shutil
import sys
import threading
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO

from corral import _startup
from corral.errors import CorralError

if TYPE_CHECKING:
    import mcp_types
    from mcp import Client

    from corral.settings import McpServerSettings

__all__ = [
    "INSTALL_HINT",
    "McpCallError",
    "McpUnavailableError",
    "ServerConnection",
    "ServerState",
    "preload_sdk",
]

INSTALL_HINT = "install corral[mcp] (the MCP SDK) to use MCP servers: pip install 'corral[mcp]'"
"""What a process without the `mcp` extra says when a server is configured."""

ServerState = Literal["idle", "starting", "ready", "failed", "down"]
"""`idle` (not started yet), `starting`, `ready`, `failed` (its start failed; final), `down` (it
crashed after its one restart; final)."""

_STDERR_TAIL = 300
"""Characters of the server's last stderr line a problem quotes at most."""
_MAX_TOOL_PAGES = 100


class McpUnavailableError(CorralError):
    """The MCP SDK is not installed (the `mcp` extra)."""


class McpCallError(Exception):
    """A tool call failed; the message is what the agent reads."""


_SDK_MODULES = ("mcp", "mcp.client.stdio", "mcp.client.streamable_http", "httpx2")
"""What a server's start imports: the SDK's client and its transports (about a second of CPU)."""


class _Preload:
    """The SDK imported in a daemon thread while the front end starts (`preload_sdk`)."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self._release_gc = _startup.hold()  # a paused start-up collector waits for these modules
        try:
            threading.Thread(target=self._run, name="corral-mcp-sdk", daemon=True).start()
        except BaseException:
            self._release_gc()
            raise

    def _run(self) -> None:
        try:
            for name in _SDK_MODULES:
                importlib.import_module(name)
        except ImportError:
            pass  # the start says so (`_require_sdk`)
        finally:
            self._release_gc()
            self.done.set()


_PRELOAD: _Preload | None = None


def preload_sdk() -> None:
    """Start importing the MCP SDK in the background (once per process); a server's start waits for
    it without blocking the event loop."""
    global _PRELOAD
    if _PRELOAD is None and importlib.util.find_spec("mcp") is not None:
        _PRELOAD = _Preload()


async def _sdk_loaded() -> None:
    """Wait (off the event loop) for a background import of the SDK to end."""
    if _PRELOAD is not None and not _PRELOAD.done.is_set():
        await asyncio.to_thread(_PRELOAD.done.wait)


def _require_sdk() -> None:
    try:
        import mcp  # noqa: F401
    except ImportError:
        raise McpUnavailableError(INSTALL_HINT) from None


class ServerConnection:
    """One configured server's session in this process (see the module docstring).

    Args:
        name: The server's name (`[mcp_servers.<name>]`).
        config: Its settings.
        cwd: Where a relative `cwd` setting is resolved, and a stdio server runs without one.
        log_dir: Where its stderr log goes (`None`: discarded).
    """

    def __init__(self, name: str, config: McpServerSettings, *, cwd: Path, log_dir: Path | None) -> None:
        self.name = name
        self.config = config
        self._cwd = cwd
        self._log_dir = log_dir
        self.state: ServerState = "idle"
        self.problem: str | None = None
        """Why it failed or is down (final states), in one line."""
        self.tools: tuple[mcp_types.Tool, ...] = ()
        """Its tools, as it listed them when it (re)started."""
        self.restarts = 0
        self.crashes = 0
        self.server_version: str | None = None
        """`name version` of the server as it identified itself."""
        self.protocol_version: str | None = None
        """The protocol version negotiated (`2026-07-28` through `server/discover`, or a handshake era's)."""
        self._client: Client | None = None
        self._epoch = 0
        """Which start the current client is (a crash handled for one start is not handled twice)."""
        self._lock = asyncio.Lock()
        self._gone = asyncio.Event()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._log_offset = 0
        self._closed = False

    # --- starting ----------------------------------------------------------------------------------

    async def start(self) -> bool:
        """Start the server (once) and list its tools; whether it is ready. Never raises but for
        cancellation (without the SDK it fails, naming the `mcp` extra)."""
        if self.state == "ready" and not self._gone.is_set():
            return True
        async with self._lock:
            if self.state == "idle":
                await self._open()
            elif self.state == "ready" and self._gone.is_set():
                await self._crashed(self._epoch)
        return self.state == "ready"

    async def _open(self) -> bool:
        """One start: the session task, its readiness within `startup_timeout_s`. Sets `state`;
        whether the server is ready."""
        await _sdk_loaded()
        try:
            _require_sdk()
        except McpUnavailableError:
            self.state = "failed"
            self.problem = INSTALL_HINT
            return False
        if self._closed:
            self.state = "down"
            self.problem = "corral is shutting down"
            return False
        self.state = "starting"
        self._epoch += 1
        self._gone = asyncio.Event()
        self._stop = asyncio.Event()
        ready: asyncio.Future[tuple[mcp_types.Tool, ...]] = asyncio.get_running_loop().create_future()
        self._task = asyncio.get_running_loop().create_task(self._hold(ready), name=f"mcp-server {self.name}")
        timeout = self.config.startup_timeout_s
        try:
            tools = await asyncio.wait_for(asyncio.shield(ready), timeout)
        except TimeoutError:
            await self._end_task(graceful=False)
            self._fail(f"it did not start and list its tools within {timeout:g} s (startup_timeout_s)")
            return False
        except asyncio.CancelledError:
            await self._end_task(graceful=False)
            self.state = "idle"
            raise
        except Exception as exc:
            await self._end_task(graceful=False)
            self._fail(_describe(exc))
            return False
        self.tools = tools
        self.state = "ready"
        self.problem = None
        return True

    def _fail(self, problem: str) -> None:
        self.state = "failed"
        self.problem = self._with_stderr(problem)
        self.tools = ()

    async def _hold(self, ready: asyncio.Future[tuple[mcp_types.Tool, ...]]) -> None:
        """The session's task: enter the client, list the tools, then wait for a stop or the end of
        the server's stream, and leave the client (its process is ended) in this same task."""
        from mcp import Client

        log = self._open_log()
        try:
            transport = _Watched(self._transport(log), self._gone)
            async with Client(transport, mode="auto", client_info=_client_info()) as client:
                info = client.server_info
                if info is not None:
                    self.server_version = f"{info.name} {info.version}"
                self.protocol_version = client.protocol_version
                tools = await _list_tools(client)
                self._client = client
                if not ready.done():
                    ready.set_result(tools)
                await _first(self._stop.wait(), self._gone.wait())
        except BaseException as exc:
            if not ready.done():
                if isinstance(exc, asyncio.CancelledError):
                    ready.cancel()
                else:
                    ready.set_exception(exc)
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            self._client = None
            self._gone.set()
            if log is not None:
                log.close()

    def _transport(self, log: TextIO | None) -> AbstractAsyncContextManager[Any]:
        config = self.config
        if config.url is not None:
            return _http(config.url, dict(config.headers))
        from mcp import StdioServerParameters
        from mcp.client.stdio import get_default_environment, stdio_client

        assert config.command is not None
        env = {**get_default_environment(), **config.env}
        program = shutil.which(config.command, path=env.get("PATH"))
        if program is None:
            raise McpCallError(f"its command {config.command!r} was not found on PATH")
        cwd = self._cwd if config.cwd is None else self._cwd / Path(config.cwd).expanduser()
        argv = [*_die_with_host(), program, *config.args]
        params = StdioServerParameters(command=argv[0], args=argv[1:], env=config.env, cwd=cwd)
        return stdio_client(params, errlog=log if log is not None else _devnull())

    def _open_log(self) -> TextIO | None:
        if self._log_dir is None or self.config.url is not None:
            return None
        from corral._paths import ensure_private_dir

        try:
            ensure_private_dir(self._log_dir)
            path = self._log_dir / f"{self.name}.log"
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            log = os.fdopen(fd, "a", encoding="utf-8")
            self._log_offset = log.tell()
            return log
        except OSError:
            return None

    @property
    def log_path(self) -> Path | None:
        """The server's stderr log (stdio servers), or `None`."""
        if self._log_dir is None or self.config.url is not None:
            return None
        return self._log_dir / f"{self.name}.log"

    def _with_stderr(self, problem: str) -> str:
        """`problem`, with the last line the server wrote to stderr since this start when there is one."""
        path = self.log_path
        if path is None:
            return problem
        try:
            with path.open("rb") as handle:
                handle.seek(self._log_offset)
                text = handle.read(65536).decode("utf-8", "replace")
        except OSError:
            return problem
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        if not lines:
            return problem
        return f"{problem}; its stderr ends: {lines[-1][:_STDERR_TAIL]}"

    # --- calls -------------------------------------------------------------------------------------

    async def call(self, tool: str, arguments: dict[str, Any]) -> mcp_types.CallToolResult:
        """Call `tool` with `arguments` within `tool_timeout_s`.

        Raises:
            McpCallError: The server is not available, timed out, crashed during the call or refused it;
                the message says which, for the agent.
        """
        from mcp import MCPError
        from mcp_types import REQUEST_TIMEOUT

        client, epoch = await self._ready_client()
        timeout = self.config.tool_timeout_s
        try:
            return await asyncio.wait_for(
                client.call_tool(tool, arguments, read_timeout_seconds=timeout), timeout + 1
            )
        except asyncio.CancelledError:
            raise
        except TimeoutError:
            raise McpCallError(self._timed_out(tool, timeout)) from None
        except MCPError as exc:
            if exc.code == REQUEST_TIMEOUT:
                raise McpCallError(self._timed_out(tool, timeout)) from None
            if self._gone.is_set():
                raise McpCallError(await self._crashed_during(tool, epoch)) from None
            raise McpCallError(
                f"the MCP server {self.name} refused the call of {tool}: {exc.message}"
            ) from None
        except Exception as exc:
            if self._gone.is_set():
                raise McpCallError(await self._crashed_during(tool, epoch)) from None
            raise McpCallError(
                f"the call of {tool} on the MCP server {self.name} failed: {_describe(exc)}"
            ) from None

    def _timed_out(self, tool: str, timeout: float) -> str:
        return (
            f"the MCP server {self.name} did not answer the call of {tool} within {timeout:g} s "
            "(tool_timeout_s); corral asked it to cancel the call, but it may still have done it: "
            "check its effect before calling again"
        )

    async def _ready_client(self) -> tuple[Client, int]:
        """The live client (a server found gone is restarted first, once), and its start's epoch."""
        if self.state != "ready" or self._gone.is_set():
            async with self._lock:
                if self.state == "idle":
                    await self._open()
                elif self.state == "ready" and self._gone.is_set():
                    await self._crashed(self._epoch)
        client = self._client
        if self.state != "ready" or client is None:
            raise McpCallError(self.unavailable())
        return client, self._epoch

    async def _crashed_during(self, tool: str, epoch: int) -> str:
        async with self._lock:
            await self._crashed(epoch)
        what = f"the MCP server {self.name} exited during the call of {tool}, so its effect is unknown"
        if self.state == "ready":
            return f"{what}; corral restarted the server: check the effect, then call again if needed"
        return f"{what}; {self.unavailable()}"

    async def _crashed(self, epoch: int) -> None:
        """The start `epoch` ended on its own: restart it the first time, else mark the server down.
        Called under the lock; a crash already handled (another epoch) is left alone."""
        if epoch != self._epoch or self.state != "ready":
            return
        self.crashes += 1
        await self._end_task()
        if self.restarts >= 1:
            self.state = "down"
            self.tools = ()
            self.problem = self._with_stderr(
                f"it exited {self.crashes} times (restarted once already), so corral does not start it "
                "again in this process"
            )
            return
        self.restarts += 1
        if not await self._open():
            self.state = "down"
            self.problem = f"it exited and its restart failed: {self.problem}"

    def unavailable(self) -> str:
        """Why its tools cannot be called now, for the agent."""
        if self.state == "failed":
            return f"the MCP server {self.name} failed to start: {self.problem}"
        if self.state == "down":
            return f"the MCP server {self.name} is not available: {self.problem}"
        return f"the MCP server {self.name} is not running"

    # --- closing -----------------------------------------------------------------------------------

    async def _end_task(self, *, graceful: bool = True) -> None:
        """End the session's task: let it leave the client (`graceful`: within 10 s), else cancel it;
        either way the SDK ends a stdio server's process (stdin closed, then its process group signalled)."""
        task, self._task = self._task, None
        if task is None:
            return
        self._stop.set()
        if graceful:
            try:
                await asyncio.wait_for(asyncio.shield(task), 10)
                return
            except TimeoutError:
                pass
            except asyncio.CancelledError:
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
                raise
            except Exception:
                return  # the task ended on its own failure: nothing is left to end
        task.cancel()
        with contextlib.suppress(BaseException):
            await task

    async def aclose(self) -> None:
        """End the session (a stdio server's process with it) for good; the state stays for reports."""
        self._closed = True
        await self._end_task()
        if self.state in ("ready", "starting"):
            self.state = "down"
            self.problem = "corral closed its MCP sessions (the process is ending)"


# --- the transport ---------------------------------------------------------------------------------


class _Watched:
    """A transport whose read stream sets `gone` when the server's stream ends (it exited)."""

    def __init__(self, inner: AbstractAsyncContextManager[Any], gone: asyncio.Event) -> None:
        self._inner = inner
        self._gone = gone

    async def __aenter__(self) -> tuple[Any, Any]:
        read, write = await self._inner.__aenter__()
        return _EndWatch(read, self._gone), write

    async def __aexit__(self, *exc: Any) -> bool | None:
        return await self._inner.__aexit__(*exc)


class _EndWatch:
    """The read stream of `_Watched`: the stream as it was, plus the event at its end."""

    def __init__(self, stream: Any, gone: asyncio.Event) -> None:
        self._stream = stream
        self._gone = gone

    @property
    def last_context(self) -> Any:
        return getattr(self._stream, "last_context", None)

    async def receive(self) -> Any:
        import anyio

        try:
            return await self._stream.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self._gone.set()
            raise

    def __aiter__(self) -> _EndWatch:
        return self

    async def __anext__(self) -> Any:
        import anyio

        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def __aenter__(self) -> _EndWatch:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()


@asynccontextmanager
async def _http(url: str, headers: dict[str, str]) -> AsyncIterator[Any]:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as http,
        streamable_http_client(url, http_client=http) as streams,
    ):
        yield streams


_GROUP_ENDS_WITH_HOST = (
    'trap "trap - TERM; kill -TERM 0" TERM; exec 3<&0; "$@" <&3 3<&- & wait $! 2>/dev/null'
)
"""The shell between `setpriv` and a stdio server: `--pdeathsig` reaches only the process it execs,
so this shell takes the signal when the host dies and passes it to the whole process group — a
server started through `npx` or `uvx` ends with its launcher, not only the launcher. An
asynchronous command's stdin would be `/dev/null`: the server gets the shell's through fd 3; the
shell's own "Terminated" is kept out of the server's stderr log. The SDK's own ending (stdin
closed, then SIGTERM and SIGKILL to the group) is unchanged."""


def _die_with_host() -> list[str]:
    """The wrapper that makes a stdio server's process group end with this process (Linux `setpriv
    --pdeathsig` and a shell that passes the signal on), or none."""
    if not sys.platform.startswith("linux"):
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return []
    return [setpriv, "--pdeathsig", "TERM", "--", "/bin/sh", "-c", _GROUP_ENDS_WITH_HOST, "mcp-server"]


_DEVNULL: TextIO | None = None


def _devnull() -> TextIO:
    global _DEVNULL
    if _DEVNULL is None:
        _DEVNULL = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - kept for the process
    return _DEVNULL


def _client_info() -> Any:
    from mcp_types import Implementation

    from corral._version import __version__

    return Implementation(name="corral", version=__version__)


async def _list_tools(client: Client) -> tuple[mcp_types.Tool, ...]:
    tools: list[mcp_types.Tool] = []
    cursor: str | None = None
    for _ in range(_MAX_TOOL_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    return tuple(tools)


async def _first(*waits: Any) -> None:
    """Return when the first of `waits` (coroutines) returns; cancel the others."""
    tasks = [asyncio.ensure_future(wait) for wait in waits]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()


def _describe(exc: BaseException) -> str:
    """One line for a failure to start or call: the exception's own words."""
    from mcp import MCPError

    if isinstance(exc, McpCallError):
        return str(exc)
    if isinstance(exc, MCPError):
        if exc.message == "Connection closed":
            return "it exited (or closed its connection) before it answered"
        return exc.message
    if isinstance(exc, BaseExceptionGroup):
        inner = exc.exceptions[0] if exc.exceptions else None
        if inner is not None:
            return _describe(inner)
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
