"""An enforced read-only sandbox for the `bash` tool of read agents, built on bubblewrap.

In the original, a read agent's "read-only" nature was only an instruction.
Here a read agent's `bash` runs inside `bwrap` (Debian package `bubblewrap`):

    bwrap --ro-bind / /                    the whole file system, read-only (recursively,
                                           so every submount is read-only too)
          --dev /dev                       a minimal /dev (null, zero, random, urandom, tty,
                                           pts, shm) instead of the host's devices
          --proc /proc                     a fresh /proc for the new pid namespace
          --tmpfs <scratch>                the private temp dir: writable, empty, gone when
                                           the command ends. <scratch> is an empty 0700
                                           directory made once per sandbox on the host, only
                                           a mount point; the host's /tmp stays visible
                                           (read-only), because the project or the Python
                                           that runs it may live there
          --chdir <cwd>                    the command runs in the same path as outside
          --setenv TMPDIR <scratch>        temp files go to the private temp dir
          --unshare-net                    no network: a new namespace with only loopback
          --unshare-pid                    the command cannot see or signal host processes,
                                           and everything it started dies with it
          --unshare-ipc --unshare-uts      no shared IPC objects or host name changes
          --unshare-cgroup-try             a private cgroup view where the kernel allows it
          --unshare-user-try               a user namespace where available (an unprivileged
                                           bwrap creates one anyway; as root it is optional)
          --cap-drop ALL                   no capabilities, even as root inside a container
          --die-with-parent                the sandbox dies when the `bwrap` the tool runs
                                           is killed (timeouts, aborts kill its group)
          --new-session                    no access to the controlling terminal (TIOCSTI)
          -- <argv>

`ReadOnlySandbox.probe()` runs a tiny command through exactly these flags and
checks that it worked: the command ran, $TMPDIR was writable, and a directory
outside was not. When it fails (no `bwrap`, no namespaces, not Linux) the
status says why; the caller then falls back to the read-only instruction and
says so. Nothing here raises for an unusable sandbox.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sys
import tempfile
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

__all__ = ["PROBE_TIMEOUT_SECONDS", "CommandSandbox", "ReadOnlySandbox", "SandboxStatus"]

PROBE_TIMEOUT_SECONDS = 10.0
"""How long the probe command may take before the sandbox counts as not working."""

_PROBE_MARK = "corral-sandbox-ok"
_INSTALL_HINT = "install the bubblewrap package (e.g. `apt-get install bubblewrap`)"


class CommandSandbox(Protocol):
    """Something that rewrites a command line so it runs confined (what `BashTool` accepts)."""

    description: str
    """One sentence for the tool description, telling the model what the confinement allows."""

    def wrap(self, argv: list[str], cwd: Path) -> list[str]:
        """The command line that runs `argv` in `cwd` inside the sandbox."""
        ...


@dataclass(frozen=True, slots=True)
class SandboxStatus:
    """Whether the sandbox works here, and why (or why not)."""

    ok: bool
    """`True` when the probe proved the sandbox is enforced."""
    reason: str
    """One line: what works, or what is missing and how to fix it."""


class ReadOnlySandbox:
    """A bubblewrap sandbox: read-only file system, a private writable `$TMPDIR`, no network.

    Args:
        bwrap: Path of the `bwrap` binary (default: `bwrap` found on `PATH`).
    """

    description = (
        "Commands run in a read-only sandbox: files can be read but not changed, "
        "only $TMPDIR is writable (and private to each command), and there is no network."
    )

    def __init__(self, bwrap: str | None = None) -> None:
        self.bwrap: str | None = bwrap or shutil.which("bwrap")
        """The `bwrap` binary, or `None` when it is not installed."""
        self._status: SandboxStatus | None = None
        self._scratch: str | None = None

    def _scratch_mount(self) -> str:
        """The empty host directory each command's private tmpfs is mounted on."""
        if self._scratch is None:
            self._scratch = tempfile.mkdtemp(prefix="corral-sandbox-tmp-")
            weakref.finalize(self, _remove_empty_dir, self._scratch)
        return self._scratch

    @property
    def status(self) -> SandboxStatus | None:
        """The result of the last `probe()`, or `None` before the first."""
        return self._status

    def wrap(self, argv: list[str], cwd: Path) -> list[str]:
        """The `bwrap` command line that runs `argv` in `cwd`, confined (flags in the module docstring).

        Args:
            argv: The command and its arguments.
            cwd: The working directory; the command sees it at the same path, read-only.
        """
        bwrap = self.bwrap or "bwrap"
        cwd_text = os.path.abspath(cwd)
        scratch = self._scratch_mount()
        flags = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", scratch]
        flags += ["--chdir", cwd_text, "--setenv", "TMPDIR", scratch]
        flags += ["--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
        flags += ["--unshare-cgroup-try", "--unshare-user-try", "--cap-drop", "ALL"]
        flags += ["--die-with-parent", "--new-session"]
        return [bwrap, *flags, "--", *argv]

    async def probe(self) -> SandboxStatus:
        """Run a tiny command in the sandbox and check that it is enforced.

        The command must run, write to the private `$TMPDIR`, and fail to write to a
        fresh directory outside. The result is also kept in `status`. Never raises
        for an unusable sandbox: the status says why.
        """
        self._status = await self._probe()
        return self._status

    async def _probe(self) -> SandboxStatus:
        if not sys.platform.startswith("linux"):
            return SandboxStatus(False, f"the bubblewrap sandbox needs Linux (this is {sys.platform})")
        if self.bwrap is None:
            return SandboxStatus(False, f"bwrap was not found on PATH; {_INSTALL_HINT}")
        outside = Path(tempfile.mkdtemp(prefix="corral-sandbox-probe-"))
        target = outside / "written"
        script = f'echo {_PROBE_MARK} > "$TMPDIR/probe" && cat "$TMPDIR/probe" && ! (echo x > "{target}") 2>/dev/null'
        try:
            argv = self.wrap(["/bin/sh", "-c", script], outside)
            try:
                process = await asyncio.create_subprocess_exec(
                    *argv,
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE,
                    start_new_session=True,
                )
            except OSError as exc:
                return SandboxStatus(
                    False, f"bwrap could not be started ({exc.strerror or exc}); {_INSTALL_HINT}"
                )
            try:
                stdout, stderr = await asyncio.wait_for(process.communicate(), PROBE_TIMEOUT_SECONDS)
            except asyncio.CancelledError:
                # Never leave the probe (and its pipes) behind when the caller is cancelled.
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, 9)
                await asyncio.shield(process.wait())
                raise
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, 9)
                await process.wait()
                return SandboxStatus(
                    False, f"the bwrap probe did not finish within {PROBE_TIMEOUT_SECONDS:g} s"
                )
            if target.exists():
                return SandboxStatus(False, "bwrap ran, but the file system was writable inside the sandbox")
            if process.returncode != 0 or _PROBE_MARK not in stdout.decode(errors="replace"):
                detail = _first_line(stderr.decode(errors="replace")) or f"exit code {process.returncode}"
                return SandboxStatus(
                    False,
                    f"bwrap cannot create the sandbox here ({detail}); user namespaces may be disabled",
                )
            return SandboxStatus(
                True,
                f"bubblewrap sandbox works ({self.bwrap}): read-only file system, private $TMPDIR, no network",
            )
        finally:
            shutil.rmtree(outside, ignore_errors=True)


def _remove_empty_dir(path: str) -> None:
    with contextlib.suppress(OSError):
        os.rmdir(path)


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""
