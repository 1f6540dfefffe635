"""The `bash` tool: run a shell command in its own process group.

The command runs as `[shell, "-c", command]` with stdin closed and stderr
merged into stdout, in a new session (so a new process group whose id is the
shell's pid). Output is read from a pipe on the event loop. The tool keeps a
rolling window of the newest output (enough for the 50 KB tail), the true
byte and line counts, and, as soon as the output would be truncated (over
50 KB or 2000 lines), a full copy in `$TMPDIR/corral-bash-<16 hex>.log`
(mode 0600) that the truncation notice names.

Ending a command, on timeout or cancellation, signals the whole process
group: SIGTERM, then (after the shell exits or a short grace period, waited
on and not slept) SIGKILL to anything left in the group. Processes a command
left running in the background after a normal exit are not touched, as in Pi.

A cancelled call re-raises `asyncio.CancelledError`; the output so far,
formatted as Pi reports an abort (`…\\n\\nCommand aborted`), is attached to
the exception and can be read with `aborted_output(exc)`.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from corral._process import kill_group
from corral.agent._tool import AgentTool, ToolError, ToolResult, ToolUpdate
from corral.llm import TextContent

from ._common import format_number, object_schema, optional_number, require_str
from ._truncate import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, TruncationResult, format_size, truncate_tail

if TYPE_CHECKING:
    from ._sandbox import CommandSandbox, SandboxCommand

__all__ = [
    "BashTool",
    "RunningProcess",
    "UserCommandResult",
    "aborted_output",
    "resolve_shell",
    "run_user_command",
]

KILL_GRACE_SECONDS = 2.0
"""How long a process group gets between SIGTERM and SIGKILL."""
DRAIN_SECONDS = 0.5
"""How long to wait for the pipe to close after the shell exits (background jobs may hold it)."""
UPDATE_INTERVAL_SECONDS = 0.1
"""Minimum time between two `on_update` calls."""
_ABORT_NOTE = "bash output before abort:\n"


def aborted_output(exc: BaseException) -> str | None:
    """The text a cancelled bash call had produced, as Pi reports it (`…\\n\\nCommand aborted`).

    Returns `None` when `exc` did not come from a cancelled bash call.
    """
    for note in reversed(getattr(exc, "__notes__", ())):
        if isinstance(note, str) and note.startswith(_ABORT_NOTE):
            return note[len(_ABORT_NOTE) :]
    return None


def resolve_shell(shell_path: str | None = None) -> str:
    """The shell to run commands with: `shell_path`, else `/bin/bash`, else `bash` on PATH, else `sh`.

    Raises:
        ToolError: `shell_path` was given but does not exist.
    """
    if shell_path:
        if not os.path.exists(shell_path):
            raise ToolError(f"Custom shell path not found: {shell_path}. Fix the shellPath setting.")
        return shell_path
    if os.path.exists("/bin/bash"):
        return "/bin/bash"
    return shutil.which("bash") or "sh"


@dataclass(frozen=True, slots=True)
class RunningProcess:
    """A command the bash tool is running now."""

    pid: int
    """Pid of the shell; also the id of its process group."""
    command: str
    """The command as given."""
    call_id: str
    """The tool call that started it."""
    started_at: float = field(default_factory=time.time)
    """Unix time (seconds) it started."""


def _append_status(text: str, status: str) -> str:
    return f"{text}\n\n{status}" if text else status


class _Output:
    """Collects a command's output: rolling window, counters, temp log, throttled updates."""

    def __init__(self, on_update: ToolUpdate | None, loop: asyncio.AbstractEventLoop) -> None:
        self._on_update = on_update
        self._loop = loop
        self._window = bytearray()
        self.total_bytes = 0
        self.newlines = 0
        self.last_line_bytes = 0
        self.full_output_path: str | None = None
        self._log: BinaryIO | None = None
        self._last_update = 0.0
        self._pending: asyncio.TimerHandle | None = None
        self._dirty = False
        self._closed = False
        self.eof = asyncio.Event()

    def append(self, data: bytes) -> None:
        if self._closed:
            return
        self.total_bytes += len(data)
        count = data.count(b"\n")
        self.newlines += count
        self.last_line_bytes = (
            len(data) - data.rfind(b"\n") - 1 if count else self.last_line_bytes + len(data)
        )
        self._window += data
        if self._log is None and (
            self.total_bytes > DEFAULT_MAX_BYTES or self.newlines + 1 > DEFAULT_MAX_LINES
        ):
            self._open_log()
        elif self._log is not None:
            self._log.write(data)
        if len(self._window) > 4 * DEFAULT_MAX_BYTES:
            start = len(self._window) - 2 * DEFAULT_MAX_BYTES
            while start < len(self._window) and (self._window[start] & 0xC0) == 0x80:
                start += 1
            del self._window[:start]
        self._schedule_update()

    def _open_log(self) -> None:
        path = os.path.join(tempfile.gettempdir(), f"corral-bash-{secrets.token_hex(8)}.log")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        self._log = os.fdopen(fd, "wb")
        self._log.write(self._window)
        self.full_output_path = path

    def close_log(self) -> None:
        if self._log is not None:
            self._log.close()

    def snapshot(self) -> TruncationResult:
        """The tail-truncated output so far, with the true totals."""
        result = truncate_tail(self._window.decode("utf-8", "replace"))
        total_lines = self.newlines + 1
        if self.total_bytes > len(self._window) or total_lines > result.total_lines:
            result = replace(result, truncated=True, truncated_by=result.truncated_by or "bytes")
        return replace(result, total_lines=total_lines, total_bytes=self.total_bytes)

    def partial_details(self, truncation: TruncationResult) -> dict[str, Any]:
        details: dict[str, Any] = {}
        if truncation.truncated:
            details["truncation"] = truncation.to_dict()
        if self.full_output_path is not None:
            details["fullOutputPath"] = self.full_output_path
        return details

    def format(self, *, empty: str) -> tuple[str, dict[str, Any]]:
        """The final text (with Pi's truncation notice) and details."""
        truncation = self.snapshot()
        text = truncation.content or empty
        details = self.partial_details(truncation)
        if truncation.truncated:
            start = truncation.total_lines - truncation.output_lines + 1
            end = truncation.total_lines
            where = self.full_output_path
            if truncation.last_line_partial:
                text += (
                    f"\n\n[Showing last {format_size(truncation.output_bytes)} of line {end} "
                    f"(line is {format_size(self.last_line_bytes)}). Full output: {where}]"
                )
            elif truncation.truncated_by == "lines":
                text += f"\n\n[Showing lines {start}-{end} of {truncation.total_lines}. Full output: {where}]"
            else:
                text += (
                    f"\n\n[Showing lines {start}-{end} of {truncation.total_lines} "
                    f"({format_size(DEFAULT_MAX_BYTES)} limit). Full output: {where}]"
                )
        return text, details

    # -- throttled updates -------------------------------------------------

    def _schedule_update(self) -> None:
        if self._on_update is None:
            return
        self._dirty = True
        delay = UPDATE_INTERVAL_SECONDS - (self._loop.time() - self._last_update)
        if delay <= 0:
            self._cancel_pending()
            self.emit_update()
        elif self._pending is None:
            self._pending = self._loop.call_later(delay, self._fire)

    def _fire(self) -> None:
        self._pending = None
        self.emit_update()

    def _cancel_pending(self) -> None:
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None

    def emit_update(self) -> None:
        if self._on_update is None or not self._dirty:
            return
        self._dirty = False
        self._last_update = self._loop.time()
        truncation = self.snapshot()
        self._on_update(ToolResult.text(truncation.content, details=self.partial_details(truncation) or None))

    def finish(self) -> None:
        self._cancel_pending()
        self.emit_update()
        self._on_update = None
        self._closed = True
        self.close_log()


class _PipeReader(asyncio.Protocol):
    def __init__(self, output: _Output) -> None:
        self._output = output

    def data_received(self, data: bytes) -> None:
        self._output.append(data)

    def eof_received(self) -> bool | None:
        self._output.eof.set()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._output.eof.set()


class BashTool(AgentTool):
    """Run a shell command; tail-truncated output, full log past 50 KB, process-group kill."""

    name = "bash"
    label = "bash"
    description = (
        "Execute a bash command in the current working directory. Returns stdout and stderr together. "
        f"Output is truncated to the last {DEFAULT_MAX_LINES} lines or {DEFAULT_MAX_BYTES // 1024}KB, "
        "whichever is hit first; when truncated, the full output is saved to a temp file that the notice "
        "names. A non-zero exit code is reported as an error. Optionally pass a timeout in seconds; "
        "there is none by default. Stdin is closed, so interactive commands cannot prompt."
    )
    parameters = object_schema(
        {
            "command": {"type": "string", "description": "Bash command to execute"},
            "timeout": {"type": "number", "description": "Timeout in seconds (optional, no default timeout)"},
        },
        ["command"],
    )
    prompt_snippet = "Execute bash commands (ls, grep, find, etc.)"
    prompt_guidelines = ()

    def __init__(
        self,
        cwd: Path,
        *,
        shell_path: str | None = None,
        command_prefix: str | None = None,
        sandbox: CommandSandbox | None = None,
    ) -> None:
        """Create the tool.

        Args:
            cwd: Directory commands run in.
            shell_path: Shell to use instead of bash (Pi's `shellPath` setting).
            command_prefix: Lines run before every command (Pi's `shellCommandPrefix`).
            sandbox: Confinement every command runs in (a read agent's `ReadOnlySandbox`);
                its description is added to the tool's.
        """
        self.cwd = Path(cwd)
        self.shell_path = shell_path
        self.command_prefix = command_prefix
        self.sandbox = sandbox
        if sandbox is not None:
            self.description = f"{type(self).description} {sandbox.description}"
        self._running: dict[int, RunningProcess] = {}

    def running_processes(self) -> list[RunningProcess]:
        """The commands this tool instance is running now, oldest first."""
        return sorted(self._running.values(), key=lambda item: item.started_at)

    @property
    def active_pids(self) -> frozenset[int]:
        """Pids (= process group ids) of the shells this tool instance is running now."""
        return frozenset(self._running)

    async def execute(
        self, call_id: str, params: dict[str, Any], on_update: ToolUpdate | None = None
    ) -> ToolResult:
        """Run `params["command"]`; see the module docstring for the process handling."""
        command = require_str(params, "command")
        timeout = optional_number(params, "timeout")
        if not self.cwd.is_dir():
            raise ToolError(f"Working directory does not exist: {self.cwd}\nCannot execute bash commands.")
        shell = resolve_shell(self.shell_path)
        full_command = f"{self.command_prefix}\n{command}" if self.command_prefix else command
        loop = asyncio.get_running_loop()
        output = _Output(on_update, loop)
        argv = [shell, "-c", full_command]
        confined: SandboxCommand | None = None
        if self.sandbox is not None:
            try:
                confined = self.sandbox.prepare(argv, self.cwd)
            except (OSError, ValueError) as exc:
                raise ToolError(f"Cannot run the command in the sandbox: {exc}") from None
            argv = confined.argv
        read_fd, write_fd = os.pipe()
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=write_fd,
                stderr=write_fd,
                cwd=self.cwd,
                env=None if confined is None else confined.env,
                pass_fds=() if confined is None else confined.pass_fds,
                start_new_session=True,
            )
        except OSError as exc:
            os.close(read_fd)
            if confined is not None:
                confined.close()
            raise ToolError(f"Failed to start {argv[0]}: {exc.strerror or exc}") from None
        finally:
            os.close(write_fd)
        self._running[process.pid] = RunningProcess(process.pid, command, call_id)
        transport: asyncio.BaseTransport | None = None
        try:
            transport, _ = await loop.connect_read_pipe(
                lambda: _PipeReader(output), os.fdopen(read_fd, "rb", 0)
            )
            return await self._supervise(process, output, timeout)
        except ToolError as exc:
            note = self.sandbox.explain(str(exc)) if self.sandbox is not None else None
            if note is None:
                raise
            raise ToolError(_append_status(str(exc), note), details=exc.details) from None
        finally:
            if process.returncode is None:
                # Left early (cancelled before supervision began, or an unexpected error): no orphans.
                await asyncio.shield(asyncio.ensure_future(kill_group(process, KILL_GRACE_SECONDS)))
            self._running.pop(process.pid, None)
            if transport is not None:
                transport.close()
            output.finish()
            if confined is not None:
                confined.close()

    async def _supervise(
        self, process: asyncio.subprocess.Process, output: _Output, timeout: float | None
    ) -> ToolResult:
        try:
            if timeout is not None and timeout > 0:
                await asyncio.wait_for(process.wait(), timeout)
            else:
                await process.wait()
        except TimeoutError:
            await kill_group(process, KILL_GRACE_SECONDS)
            await _drain(output)
            output.finish()
            text, details = output.format(empty="")
            message = _append_status(text, f"Command timed out after {format_number(timeout or 0)} seconds")
            raise ToolError(message, details=details or None) from None
        except asyncio.CancelledError as exc:
            # Shielded: a second cancel must not leave the group half-killed.
            await asyncio.shield(asyncio.ensure_future(kill_group(process, KILL_GRACE_SECONDS)))
            await _drain(output)
            output.finish()
            text, _ = output.format(empty="")
            exc.add_note(_ABORT_NOTE + _append_status(text, "Command aborted"))
            raise
        await _drain(output)
        output.finish()
        text, details = output.format(empty="(no output)")
        code = process.returncode
        details["exitCode"] = code
        if code is not None and code < 0:
            name = signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)
            raise ToolError(_append_status(text, f"Command was killed by signal {name}"), details=details)
        if code:
            raise ToolError(_append_status(text, f"Command exited with code {code}"), details=details)
        return ToolResult.text(text, details=details)


@dataclass(frozen=True)
class UserCommandResult:
    """A command the user ran (Pi's `BashResult`): the output without the status line the model gets."""

    output: str
    """Merged stdout and stderr, tail-truncated with Pi's notice (empty when there was none)."""
    exit_code: int | None
    """The shell's exit code; `None` when it was cancelled or killed by a signal."""
    cancelled: bool
    truncated: bool
    full_output_path: str | None


def _strip_status(text: str, status: str) -> str:
    return text.removesuffix(f"\n\n{status}") if text != status else ""


async def run_user_command(tool: BashTool, command: str, *, call_id: str = "user") -> UserCommandResult:
    """Run `command` with `tool` (its shell, prefix, cwd, truncation) for the user, not the model.

    Cancelling the caller cancels the command (its process group is killed) and
    returns the output so far with `cancelled` set.
    """
    try:
        result = await tool.execute(call_id, {"command": command})
    except ToolError as exc:
        details = exc.details if isinstance(exc.details, dict) else {}
        code = details.get("exitCode")
        text = str(exc)
        if isinstance(code, int) and code > 0:
            text = _strip_status(text, f"Command exited with code {code}")
        elif isinstance(code, int) and code < 0:
            text = text.rsplit("\n\nCommand was killed by signal ", 1)[0]
            if text.startswith("Command was killed by signal "):
                text = ""
            code = None
        return UserCommandResult(
            output=text,
            exit_code=code if isinstance(code, int) else None,
            cancelled=False,
            truncated="truncation" in details,
            full_output_path=details.get("fullOutputPath"),
        )
    except asyncio.CancelledError as exc:
        text = _strip_status(aborted_output(exc) or "", "Command aborted")
        return UserCommandResult(
            output=text, exit_code=None, cancelled=True, truncated=False, full_output_path=None
        )
    details = result.details if isinstance(result.details, dict) else {}
    text = "".join(block.text for block in result.content if isinstance(block, TextContent))
    return UserCommandResult(
        output="" if text == "(no output)" else text,
        exit_code=details.get("exitCode", 0),
        cancelled=False,
        truncated="truncation" in details,
        full_output_path=details.get("fullOutputPath"),
    )


async def _drain(output: _Output) -> None:
    """Wait (bounded) for the rest of the output after the shell has exited."""
    try:
        await asyncio.wait_for(output.eof.wait(), DRAIN_SECONDS)
    except TimeoutError:
        pass
