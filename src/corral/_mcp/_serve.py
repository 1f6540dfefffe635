"""Run the MCP server: stdio (the default) or streamable HTTP on a loopback address.

Over stdio, `main` answers the client's opening request before it loads the SDK (see `_handshake.py`).
A non-loopback bind is refused unless `--allow-remote` is given together with a bearer token
(`--token` or `CORRAL_MCP_TOKEN`); a token, when set, is required on every HTTP request.
"""

from __future__ import annotations

import asyncio
import hmac
import importlib.util
import ipaddress
import secrets
import socket
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from contextlib import AbstractAsyncContextManager
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from corral._install import missing_extra
from corral.errors import UsageError

from ._handshake import EarlyAnswer, early_answer, read_line, write_all
from ._slot import LeadSlot

if TYPE_CHECKING:
    import anyio
    from mcp.server import Server

    from corral.lead import Lead

__all__ = ["McpOptions", "Opening", "main", "parse_bind", "serve"]

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


@dataclass
class McpOptions:
    """What `corral mcp` was asked for."""

    cwd: Path
    _: KW_ONLY
    session: str | None = None
    continue_recent: bool = False
    model: str | None = None
    surfaces: list[str] = field(default_factory=lambda: ["agent"])
    http: str | None = None
    """`HOST:PORT` for streamable HTTP; `None`: stdio."""
    allow_remote: bool = False
    token: str | None = None
    """Bearer token every HTTP request must carry (generated when `--http` is given without one)."""
    no_token: bool = False
    """`--no-token`: serve HTTP on loopback without a token (any local process may then call)."""
    elicit: bool = False
    """Ask the human for answers to agents' questions through MCP elicitation, where the client can."""
    isolation: Literal["shared", "worktree"] | None = None
    """Override the `isolation` setting: `worktree` gives write agents their own worktrees."""
    budget: dict[str, float] | None = None
    """`[budget]` keys for this lead (`--budget KEY=NUMBER`), validated when the lead opens."""
    trace: Path | None = None
    """`--trace FILE`: append the lead's spans to this file (docs/fleet.md, "Traces")."""


def parse_budget(items: list[str]) -> dict[str, float]:
    """`["tree_tokens=2000000", "agent_cost_usd=0.5"]` as `{key: number}` (whole numbers as `int`).

    Raises:
        ValueError: an item is not `KEY=NUMBER`, or a key is given twice.
    """
    out: dict[str, float] = {}
    for item in items:
        key, sep, text = item.partition("=")
        key = key.strip()
        try:
            value = float(text.replace("_", ""))
        except ValueError:
            value = float("nan")
        if not sep or not key or value != value:
            raise ValueError(f"--budget {item!r}: use KEY=NUMBER, e.g. --budget tree_tokens=2000000")
        if key in out:
            raise ValueError(f"--budget {key} is given twice; give each key once")
        out[key] = int(value) if value.is_integer() and "." not in text else value
    return out


def check_budget(budget: dict[str, float]) -> None:
    """Refuse `--budget` keys and values the lead would refuse, before the client's handshake.

    Raises:
        UsageError: naming the key.
    """
    from pydantic import ValidationError

    from corral.settings import BudgetSettings

    try:
        BudgetSettings.model_validate(budget)
    except ValidationError as exc:
        error = exc.errors()[0]
        key = ".".join(str(part) for part in error["loc"])
        if error["type"] == "extra_forbidden":
            known = ", ".join(sorted(BudgetSettings.model_fields))
            raise UsageError(f"--budget: unknown key {key!r}; the keys are {known}") from None
        raise UsageError(f"--budget: invalid value for {key!r}: {error['msg']}") from None


def parse_bind(text: str) -> tuple[str, int]:
    """`HOST:PORT` (IPv6 as `[::1]:PORT`) as a host and a port.

    Raises:
        UsageError: the text is not `HOST:PORT` with a port from 0 to 65535.
    """
    host, sep, port = text.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise UsageError(f"--http {text}: give HOST:PORT, e.g. --http 127.0.0.1:8765")
    return host, int(port)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind(host: str, *, allow_remote: bool, token: str | None, no_token: bool = False) -> None:
    """Refuse a non-loopback bind without `--allow-remote` and a token, and `--no-token` with a token
    or beyond loopback."""
    if no_token and token:
        raise UsageError(
            "--no-token and --token (or CORRAL_MCP_TOKEN) contradict each other: give one of them"
        )
    if _is_loopback(host):
        return
    if no_token:
        raise UsageError(
            f"--http {host} --no-token: a bind beyond loopback always needs a token; drop --no-token"
        )
    if not allow_remote:
        raise UsageError(
            f"--http {host}: refusing to serve beyond this machine; bind 127.0.0.1, or pass --allow-remote "
            "with --token (or CORRAL_MCP_TOKEN)"
        )
    if not token:
        raise UsageError(
            f"--http {host} --allow-remote needs a bearer token: pass --token or set CORRAL_MCP_TOKEN"
        )


def _bearer_gate(app: App, token: str) -> App:
    expected = f"Bearer {token}".encode()

    async def gate(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, expected):
                body = b'{"error":"unauthorized: send Authorization: Bearer <token>"}'
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await app(scope, receive, send)

    return gate


BACKLOG = 2048
"""Pending connections the HTTP socket queues (uvicorn's default)."""


def _say(text: str) -> None:
    print(f"corral mcp: {text}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Opening:
    """The client's first line over stdio, read before the SDK was loaded."""

    line: bytes
    early: EarlyAnswer | None
    """The answer already written for it (to an `initialize` or a `server/discover`), if any."""


def _check(options: McpOptions) -> tuple[str, int] | None:
    """The HTTP bind asked for (`None`: stdio), after refusing what cannot be served."""
    if importlib.util.find_spec("mcp") is None:
        raise UsageError(missing_extra("mcp", "corral mcp needs the MCP SDK"))
    bind = None
    if options.http is not None:
        bind = parse_bind(options.http)
        check_bind(bind[0], allow_remote=options.allow_remote, token=options.token, no_token=options.no_token)
    elif options.no_token:
        raise UsageError(
            "--no-token is for --http; over stdio only the client that started the server talks to it"
        )
    if options.budget:
        check_budget(options.budget)
    if not options.surfaces:
        raise UsageError("choose at least one surface: --surfaces agent and/or teams")
    if options.trace is not None and options.trace.is_dir():
        raise UsageError(f"--trace {options.trace} is a directory: give a file to append the spans to")
    return bind


def main(options: McpOptions) -> int:
    """`corral mcp`: check the options, answer a stdio client's opening request at once, then serve.

    Returns the exit code (0 also when the client left before its first message).

    Raises:
        CorralError: for anything the user can fix.
    """
    bind = _check(options)
    opening = None
    if bind is None:
        line = read_line(0)
        if line is None:
            return 0
        early = early_answer(line)
        if early is not None and not write_all(1, early.wire()):
            return 0
        opening = Opening(line, early)
    return asyncio.run(serve(options, opening=opening))


async def serve(options: McpOptions, *, opening: Opening | None = None) -> int:
    """Serve one lead session until the client goes away (stdio) or the process stops (HTTP).

    Over stdio the lead is opened once the `initialize` answer is out (see `LeadSlot`); over HTTP
    before the server listens. Either way a lead that cannot be opened ends the server with the
    error. `opening` is the stdio client's first line when `main` read it already.

    Raises:
        CorralError: for anything the user can fix.
    """
    bind = _check(options)
    try:
        from ._server import build_server
    except ImportError as exc:
        raise UsageError(missing_extra("mcp", f"corral mcp needs the MCP SDK ({exc})")) from None

    def opener() -> AbstractAsyncContextManager[Lead]:
        from corral.lead import open_lead

        return open_lead(
            options.cwd,
            session=options.session,
            continue_recent=options.continue_recent,
            model=options.model,
            surfaces=options.surfaces,
            isolation=options.isolation,
            budget=options.budget,
            trace=options.trace,
            _front="mcp",
        )

    def opened(lead: Lead) -> None:
        where = "stdio" if bind is None else "http"
        _say(f"lead session {lead.session_id} ({lead.session_path}) on {where}")
        for warning in lead.warnings:
            _say(f"warning: {warning}")

    stop = _Stop()
    slot = LeadSlot(opener, failed=stop.fail, opened=opened)
    server = build_server(slot, elicit=options.elicit)
    try:
        if bind is None:
            await _serve_stdio(server, slot, opening, stop)
        else:
            await slot.get()
            token = None if options.no_token else options.token or secrets.token_urlsafe(32)
            await _serve_http(server, bind, token, generated=token is not None and not options.token)
    except (asyncio.CancelledError, Exception):
        if not stop.failures:  # else whatever the SDK raised while being stopped is a consequence
            raise
    finally:
        await slot.aclose()
    if stop.failures:
        raise stop.failures[0]
    return 0


@dataclass
class _Stop:
    """Ends the stdio server, from any task, on the first failure (the lead cannot be opened, the
    SDK refused the opening corral answered). It cancels an anyio scope around the SDK's server:
    a plain `Task.cancel` can be absorbed by the SDK's task groups, and the server would then
    go on waiting for the client's next line."""

    failures: list[BaseException] = field(default_factory=list)
    scope: anyio.CancelScope | None = None

    def fail(self, exc: BaseException) -> None:
        self.failures.append(exc)
        if self.scope is not None:
            self.scope.cancel()


async def _serve_stdio(server: Server[Any], slot: LeadSlot, opening: Opening | None, stop: _Stop) -> None:
    import anyio
    from mcp.server.stdio import stdio_server
    from mcp.shared.message import SessionMessage

    from ._replay import AnswerOnce
    from ._screen import ScreenedLines, private_stdin

    with private_stdin() as fd:
        lines = ScreenedLines(fd, None if opening is None else opening.line)
        async with stdio_server(stdin=lines) as (read, write):  # type: ignore[arg-type]

            async def answer(error: Any) -> None:
                await write.send(SessionMessage(error))

            lines.attach(answer)
            with anyio.CancelScope() as stop.scope:
                if stop.failures:
                    stop.scope.cancel()
                early = None if opening is None else opening.early
                writer = AnswerOnce(write, slot, early=early, failed=stop.fail, warn=_say)
                await server.run(read, writer, server.create_initialization_options())


async def _serve_http(
    server: Server[Any], bind: tuple[str, int], token: str | None, *, generated: bool = False
) -> None:
    import uvicorn

    host, port = bind
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise UsageError(f"--http {host}:{port}: cannot listen there ({exc.strerror})") from None
    sock.listen(BACKLOG)  # connectable from the moment the address is printed (uvicorn listens later)
    app: App = server.streamable_http_app(host=host)
    if token:
        app = _bearer_gate(app, token)
    if generated:
        _say(
            f"bearer token {token} (send Authorization: Bearer <token>; --token sets one, --no-token drops it)"
        )
    elif not token:
        _say("warning: no token (--no-token): any process on this machine may call this server")
    shown = f"[{host}]" if ":" in host else host
    _say(f"serving http://{shown}:{sock.getsockname()[1]}/mcp")
    config = uvicorn.Config(app, log_level="warning", lifespan="on", backlog=BACKLOG)
    await uvicorn.Server(config).serve(sockets=[sock])
