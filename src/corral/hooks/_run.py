"""Running one command hook: the event as JSON on stdin, a minimal environment, a timeout.

The hook is `/bin/sh -c <command>` in the agent's working directory, in a session of its own so a
timeout or an abort ends the whole process group. Its stdout and stderr are kept up to
`OUTPUT_CAP` bytes each. What it said is read by `_outcome.py`; here it is only whether it ran:
`HookRun.failure` names a timeout, a crash (killed by a signal, or an exit code other than 0 and 2),
or a start that failed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from corral._process import signal_group

__all__ = ["OUTPUT_CAP", "HookRun", "hook_environment", "run_command_hook"]

OUTPUT_CAP = 1 << 20
"""Bytes of stdout (and of stderr) kept from one hook run; the rest is read and dropped."""

_PASSED = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "TMPDIR", "TZ")
"""The variables a hook gets from corral's environment (and every `LC_*`)."""


def hook_environment(project_dir: Path, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The minimal environment of a hook: `_PASSED` and `LC_*` from `environ` (default: this process's),
    with `CLAUDE_PROJECT_DIR` and `CORRAL_PROJECT_DIR` set to the project's directory."""
    source = os.environ if environ is None else environ
    env = {k: v for k, v in source.items() if k in _PASSED or k.startswith("LC_")}
    env.setdefault("PATH", os.defpath)
    env["CLAUDE_PROJECT_DIR"] = env["CORRAL_PROJECT_DIR"] = str(project_dir)
    return env


@dataclass(frozen=True, slots=True)
class HookRun:
    """How one hook ran."""

    command: str
    exit_code: int | None
    """`None` when it did not exit on its own (not started, timed out)."""
    stdout: str
    stderr: str
    failure: str | None
    """Why the run failed (`timed out after 60 s`, `exited with 1: …`, `could not start: …`), else `None`."""
    duration_ms: float


async def _read(stream: asyncio.StreamReader | None, kept: list[bytes]) -> None:
    """Read `stream` to its end into `kept` (capped at `OUTPUT_CAP`); what was read stays in `kept`
    when the read is cancelled."""
    if stream is None:
        return
    size = 0
    while True:
        data = await stream.read(65536)
        if not data:
            break
        if size < OUTPUT_CAP:
            kept.append(data[: OUTPUT_CAP - size])
        size += len(data)


async def _feed(stdin: asyncio.StreamWriter | None, payload: bytes) -> None:
    if stdin is None:
        return
    try:
        stdin.write(payload)
        await stdin.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass  # the hook did not read its input: that is its business
    finally:
        with contextlib.suppress(OSError):
            stdin.close()


_DRAIN_S = 2.0
"""How long after a hook exits its output may stay open (a background child holding it) before that
child is ended."""


async def _exited(process: asyncio.subprocess.Process) -> None:
    """Return when `process` has exited, whoever still holds its pipes (asyncio's `wait()` also waits
    for them to close). A pidfd is readable from the moment its process ends."""
    try:
        fd = os.pidfd_open(process.pid)
    except ProcessLookupError:
        return  # already exited and reaped
    except OSError:  # no pidfd on this kernel: the pipes' end is the exit
        await process.wait()
        return
    loop = asyncio.get_running_loop()
    ended = loop.create_future()

    def readable() -> None:
        if not ended.done():
            ended.set_result(None)

    loop.add_reader(fd, readable)
    try:
        await ended
    finally:
        loop.remove_reader(fd)
        os.close(fd)


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= 200 else line[:199] + "…"


async def run_command_hook(
    command: str, payload: bytes, *, cwd: Path, env: Mapping[str, str], timeout: float
) -> HookRun:
    """Run `command` with `payload` on its stdin; never raises but for cancellation (which kills it)."""
    started = time.monotonic()

    def ms() -> float:
        return (time.monotonic() - started) * 1000

    try:
        process = await asyncio.create_subprocess_exec(
            "/bin/sh",
            "-c",
            command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=cwd,
            env=dict(env),
            start_new_session=True,
        )
    except OSError as exc:
        return HookRun(command, None, "", "", f"could not start: {exc.strerror or exc}", ms())
    out: list[bytes] = []
    err: list[bytes] = []
    io = [
        asyncio.ensure_future(_feed(process.stdin, payload)),
        asyncio.ensure_future(_read(process.stdout, out)),
        asyncio.ensure_future(_read(process.stderr, err)),
    ]
    try:
        await asyncio.wait_for(_exited(process), timeout)
        # The hook exited. A child it left in the background may still hold its output open: what the
        # hook printed is read, and such a child is ended rather than holding the call to its timeout.
        _, holding = await asyncio.wait(io, timeout=_DRAIN_S)
        if holding:
            signal_group(process.pid, signal.SIGKILL)
        code = await process.wait()  # asyncio's wait returns once the pipes are closed too
    except TimeoutError:
        signal_group(process.pid, signal.SIGKILL)
        with contextlib.suppress(TimeoutError, ProcessLookupError):
            await asyncio.wait_for(process.wait(), 5)
        return HookRun(command, None, "", "", f"timed out after {timeout:g} s", ms())
    except asyncio.CancelledError:
        signal_group(process.pid, signal.SIGKILL)
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(process.wait(), 5)
        raise
    finally:
        for task in io:
            task.cancel()
        await asyncio.gather(*io, return_exceptions=True)
    stdout, stderr = _text(b"".join(out)), _text(b"".join(err))
    failure: str | None = None
    if code < 0:
        failure = f"was killed by signal {-code}"
    elif code not in (0, 2):
        said = _first_line(stderr)
        failure = f"exited with {code}" + (f": {said}" if said else "")
    return HookRun(command, code, stdout, stderr, failure, ms())
