"""`corral acp`: the corral lead as an Agent Client Protocol agent, one lead per ACP session.

The editor starts `corral acp` and speaks JSON-RPC over its stdio (`_wire`). Each `session/new`
opens a lead session (`launch_session`, as `corral run` does: built-in tools and the surfaces, and
deliveries wake the lead); `session/load` reopens one by id, recovered as with `--continue`, and
replays its history. Everything the lead does, in a prompt's turn or in a wake turn a result started,
streams as `session/update`s (`_updates`).

Nothing lost at every boundary: what reached the lead (a result, a report) is in its session before
anything shows it; the server sends each such item once and then moves the lead session's cursor
(`corral-lead-cursor`, the entry `corral mcp`'s `wait` uses) past it, only once its line is written
to the client. A server killed in between leaves the cursor before the item, and `session/load`
replays the whole session, so the item is shown then, once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from corral._version import __version__
from corral.errors import CorralError

from ._editor_mcp import editor_servers, give_editor_servers
from ._wire import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    RESOURCE_NOT_FOUND,
    Incoming,
    RpcError,
    Wire,
    parse_line,
)

if TYPE_CHECKING:
    from corral.lead import LaunchOptions
    from corral.settings import McpServerSettings

    from ._session import LeadSession

__all__ = ["MODES", "PROTOCOL_VERSION", "AcpOptions", "AcpServer", "serve"]

PROTOCOL_VERSION = 1
LINGER_ENV = "CORRAL_ACP_LINGER"
"""Seconds the server stays, once the editor closed its input, for agents still working (default 600)."""
ASK_TIMEOUT_ENV = "CORRAL_ACP_ASK_TIMEOUT"
"""Seconds a question waits for the editor's answer before it is rejected (default 600)."""


@dataclass
class AcpOptions:
    """The `corral acp` flags (those of `corral run` that apply)."""

    cwd: Path
    """Where a session opens when the client gives no usable `cwd`."""
    model: str | None = None
    surfaces: list[str] | None = None
    session: str | None = None
    """`--session`: the first `session/new` reopens this lead session instead."""
    continue_recent: bool = False
    """`--continue`: the first `session/new` reopens its directory's newest session."""


class AcpServer:
    """Serves ACP on a `Wire` until the client closes its end."""

    def __init__(self, wire: Wire, options: AcpOptions) -> None:
        self.wire = wire
        self.options = options
        self.sessions: dict[str, LeadSession] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._first_new = True
        self._opening = asyncio.Lock()
        self._switching = asyncio.Lock()
        """One mode switch at a time (opening a lead's host on its first surface awaits)."""
        self.ask_timeout: float | None = _seconds(ASK_TIMEOUT_ENV, 600.0)

    def spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def serve(self) -> int:
        """Read and answer lines until the input ends; then close every lead. The exit code: 0, or
        143 after SIGTERM (which stops at once: agents still working are stopped and marked lost)."""
        queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        terminated = False

        def terminate() -> None:
            nonlocal terminated
            terminated = True
            queue.put_nowait(None)

        loop = asyncio.get_running_loop()
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signal.SIGTERM, terminate)
        self.wire.start_reading(queue)
        try:
            while (line := await queue.get()) is not None:
                if line.strip():
                    self.handle_line(line)
            self.wire.input_ended()
            if not terminated:
                await self.linger()
        finally:
            self.wire.input_ended()
            await self.aclose()
        return 143 if terminated else 0

    async def linger(self) -> None:
        """The editor is gone: let the leads' agents finish (up to `CORRAL_ACP_LINGER` seconds), so
        their results reach the lead sessions and the next `session/load` shows them.

        Agents run in this process; leaving at once would stop them (they are marked lost). A prompt
        turn still running is cancelled first: nobody waits for its answer.
        """
        for session in self.sessions.values():
            if session.turn is not None:
                await session.cancel()
        if not self.sessions:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(
                asyncio.gather(*(s.launched.wait_until_quiet() for s in self.sessions.values())),
                _seconds(LINGER_ENV, 600.0),
            )

    def handle_line(self, line: bytes) -> None:
        """One line from the client: answer it (requests run as tasks, so `session/cancel` gets through)."""
        try:
            message = parse_line(line)
        except RpcError as exc:
            ident = exc.data.get("id") if isinstance(exc.data, dict) else None
            exc.data = None
            self.wire.fail(ident, exc)
            return
        if message.method is None:
            self.wire.answer(message)
            return
        self.spawn(self._dispatch(message))

    async def _dispatch(self, message: Incoming) -> None:
        handler = _METHODS.get(message.method or "")
        try:
            if handler is None:
                raise RpcError(METHOD_NOT_FOUND, f"unknown method {message.method!r}")
            result = await handler(self, message.params)
        except RpcError as exc:
            if message.has_id:
                self.wire.fail(message.id, exc)
            return
        except CorralError as exc:
            if message.has_id:
                self.wire.fail(message.id, RpcError(INTERNAL_ERROR, str(exc)))
            return
        except Exception as exc:
            print(f"corral acp: {message.method} failed: {exc!r}", file=sys.stderr)
            if message.has_id:
                self.wire.fail(message.id, RpcError(INTERNAL_ERROR, f"{type(exc).__name__}: {exc}"))
            return
        if message.has_id:
            self.wire.respond(message.id, result)
            if message.method == "session/new":
                session = self.sessions.get(str(result["sessionId"])) if result is not None else None
                if session is not None and not session.live:
                    session.replay()

    # --- methods -------------------------------------------------------------------------------------------

    async def initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        _int_param(params, "protocolVersion")
        return {
            "protocolVersion": PROTOCOL_VERSION,
            "agentCapabilities": {
                "loadSession": True,
                "promptCapabilities": {"image": False, "audio": False, "embeddedContext": True},
                "mcpCapabilities": {"http": True, "sse": False},
            },
            "agentInfo": {"name": "corral", "title": "corral", "version": __version__},
            "authMethods": [],
        }

    async def new_session(self, params: dict[str, Any]) -> dict[str, Any]:
        from corral.lead import LaunchOptions

        cwd = self._cwd(params)
        servers = editor_servers(_list_param(params, "mcpServers"))
        session, resumed = None, False
        if self._first_new:
            self._first_new = False
            if self.options.session is not None or self.options.continue_recent:
                session, resumed = self.options.session, True
        opened = await self._open(
            LaunchOptions(
                cwd,
                model=self.options.model,
                session=session,
                continue_recent=resumed and session is None,
                surfaces=self.options.surfaces,
            ),
            servers,
        )
        return {"sessionId": opened.session_id, **_session_state(opened)}

    async def load_session(self, params: dict[str, Any]) -> dict[str, Any]:
        from corral.lead import LaunchOptions

        session_id = _str_param(params, "sessionId")
        cwd = self._cwd(params)
        servers = editor_servers(_list_param(params, "mcpServers"))
        known = self.sessions.get(session_id)
        if known is not None:
            known.replay(again=True)
            return _session_state(known)
        try:
            opened = await self._open(
                LaunchOptions(
                    cwd, model=self.options.model, session=session_id, surfaces=self.options.surfaces
                ),
                servers,
            )
        except CorralError as exc:
            raise RpcError(RESOURCE_NOT_FOUND, f"no lead session {session_id!r}: {exc}") from None
        opened.replay()
        return _session_state(opened)

    async def _open(self, options: LaunchOptions, servers: dict[str, McpServerSettings]) -> LeadSession:
        """Open the lead session `options` name, with the editor's MCP `servers` (see `_editor_mcp`)."""
        from corral.lead import launch_session

        from ._session import LeadSession

        async with self._opening:
            launched = launch_session(options)
            session = LeadSession(launched, self)
            try:
                give_editor_servers(launched, servers)
                await launched.attach_host()
            except BaseException:
                await session.aclose()
                raise
            known = self.sessions.get(session.session_id)
            if known is not None:  # the same lead session again: keep the open one
                await session.aclose()
                return known
            session.subscribe()
            self.sessions[session.session_id] = session
            return session

    async def prompt(self, params: dict[str, Any]) -> dict[str, Any]:
        session = self._session(params)
        blocks = _list_param(params, "prompt")
        text = _prompt_text(blocks)
        if not text.strip():
            raise RpcError(
                INVALID_PARAMS, "session/prompt: the prompt has no text; send a text content block"
            )
        if session.turn is not None:
            raise RpcError(
                INVALID_PARAMS, "session/prompt: a prompt turn is running; cancel it or wait for its answer"
            )
        return {"stopReason": await session.prompt(text)}

    async def cancel(self, params: dict[str, Any]) -> None:
        session = self._session(params)
        await session.cancel()

    async def set_mode(self, params: dict[str, Any]) -> dict[str, Any]:
        """The lead's tool surfaces become those of the mode, from its next model request."""
        session = self._session(params)
        mode = _str_param(params, "modeId")
        surfaces = MODES.get(mode)
        if surfaces is None:
            raise RpcError(
                INVALID_PARAMS, f"session/set_mode: no mode {mode!r}; the modes are {', '.join(MODES)}"
            )
        async with self._switching:
            await session.launched.set_surfaces(list(surfaces.surfaces))
        return {}

    async def set_config_option(self, params: dict[str, Any]) -> dict[str, Any]:
        """`model`: the lead runs on the chosen model from its next model request."""
        session = self._session(params)
        option = _str_param(params, "configId")
        value = params.get("value")
        if option != MODEL_OPTION:
            raise RpcError(
                INVALID_PARAMS,
                f"session/set_config_option: no option {option!r}; corral offers {MODEL_OPTION!r}",
            )
        launched = session.launched
        info = next(
            (m for m in launched.registry.available_models() if m.ref == value),
            None,
        )
        if info is None:
            raise RpcError(
                INVALID_PARAMS,
                f"session/set_config_option: {value!r} is not a usable model; choose one of the "
                f"option's values (`corral models` lists them)",
            )
        launched.switch_model(info)
        return {"configOptions": _config_options(session)}

    # --- helpers ------------------------------------------------------------------------------------------

    def _session(self, params: dict[str, Any]) -> LeadSession:
        session_id = _str_param(params, "sessionId")
        session = self.sessions.get(session_id)
        if session is None:
            raise RpcError(
                RESOURCE_NOT_FOUND,
                f"no open session {session_id!r}: open one with session/new or session/load",
            )
        return session

    def _cwd(self, params: dict[str, Any]) -> Path:
        raw = params.get("cwd")
        if raw is None:
            return self.options.cwd
        if not isinstance(raw, str) or not Path(raw).is_absolute() or not Path(raw).is_dir():
            raise RpcError(INVALID_PARAMS, f"cwd {raw!r}: pass the absolute path of an existing directory")
        return Path(raw)

    async def aclose(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(BaseException):
                await task
        for session in list(self.sessions.values()):
            with contextlib.suppress(Exception):
                await session.aclose()
        self.sessions.clear()


@dataclass(frozen=True)
class Mode:
    """An ACP session mode: a set of the lead's tool surfaces (as `--surfaces` takes them)."""

    surfaces: tuple[str, ...]
    name: str
    description: str


MODES = {
    "agent": Mode(("agent",), "Agent", "The lead delegates work to managed agents (the agent tool)."),
    "teams": Mode(("teams",), "Teams", "The lead spawns and steers a team of agents (the teams tools)."),
    "agent,teams": Mode(("agent", "teams"), "Agent and teams", "Both the agent tool and the teams tools."),
    "none": Mode((), "Solo", "A plain coding agent: no agents of its own."),
}
"""The modes, by id: every set of surfaces, in `SURFACE_NAMES` order."""

MODEL_OPTION = "model"
"""The config option that picks the lead's model."""


def _mode_id(surfaces: list[str]) -> str:
    wanted = set(surfaces)
    return next((mode for mode, m in MODES.items() if set(m.surfaces) == wanted), "none")


def _session_state(session: LeadSession) -> dict[str, Any]:
    """The `modes` and `configOptions` of a `session/new` or `session/load` answer."""
    return {
        "modes": {
            "currentModeId": _mode_id(session.launched.surfaces),
            "availableModes": [
                {"id": mode, "name": m.name, "description": m.description} for mode, m in MODES.items()
            ],
        },
        "configOptions": _config_options(session),
    }


def _config_options(session: LeadSession) -> list[dict[str, Any]]:
    """The lead's model as a select option of the usable models (the current one first if not usable)."""
    launched = session.launched
    current = launched.model_info.ref
    refs = [info.ref for info in launched.registry.available_models()]
    if current not in refs:
        refs.insert(0, current)
    return [
        {
            "id": MODEL_OPTION,
            "name": "Model",
            "description": "The lead's model, from its next model request.",
            "category": "model",
            "type": "select",
            "currentValue": current,
            "options": [{"value": ref, "name": ref} for ref in refs],
        }
    ]


def _seconds(variable: str, default: float) -> float:
    """A number of seconds from the environment variable `variable` (unset or not a number: `default`)."""
    try:
        value = float(os.environ.get(variable, ""))
    except ValueError:
        return default
    return value if value >= 0 else default


def _str_param(params: dict[str, Any], name: str) -> str:
    value = params.get(name)
    if not isinstance(value, str) or not value:
        raise RpcError(INVALID_PARAMS, f"{name!r} must be a non-empty string")
    return value


def _int_param(params: dict[str, Any], name: str) -> int:
    value = params.get(name)
    if not isinstance(value, int) or isinstance(value, bool):
        raise RpcError(INVALID_PARAMS, f"{name!r} must be an integer (ACP's is 1)")
    return value


def _list_param(params: dict[str, Any], name: str) -> list[Any]:
    value = params.get(name, [])
    if not isinstance(value, list):
        raise RpcError(INVALID_PARAMS, f"{name!r} must be an array")
    return value


def _prompt_text(blocks: list[Any]) -> str:
    """The prompt's text: text blocks, embedded text resources, and resource links as `@uri`."""
    parts: list[str] = []
    for block in blocks:
        if not isinstance(block, dict):
            raise RpcError(INVALID_PARAMS, "session/prompt: each prompt item is a content block object")
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif kind == "resource" and isinstance(block.get("resource"), dict):
            resource = block["resource"]
            if isinstance(resource.get("text"), str):
                parts.append(f"\n{resource.get('uri', '')}:\n{resource['text']}")
        elif kind == "resource_link" and isinstance(block.get("uri"), str):
            parts.append(f"@{block['uri']}")
    return "".join(parts)


_METHODS = {
    "initialize": AcpServer.initialize,
    "session/new": AcpServer.new_session,
    "session/load": AcpServer.load_session,
    "session/prompt": AcpServer.prompt,
    "session/cancel": AcpServer.cancel,
    "session/set_mode": AcpServer.set_mode,
    "session/set_config_option": AcpServer.set_config_option,
}


def serve(options: AcpOptions) -> int:
    """Run `corral acp` on this process's stdio until the client closes it; the exit code.

    The protocol gets a descriptor of its own (a copy of stdout); stdout itself then points at
    stderr, so nothing else the process prints can corrupt the stream.
    """
    out = os.dup(1)
    os.dup2(2, 1)
    wire = Wire(0, out)
    try:
        return asyncio.run(AcpServer(wire, options).serve())
    except KeyboardInterrupt:
        return 130
    finally:
        with contextlib.suppress(OSError):
            os.close(out)
