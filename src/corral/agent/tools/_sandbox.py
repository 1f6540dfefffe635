"""An enforced sandbox for the `bash` tool of read agents, built on bubblewrap.

In the original, a read agent's "read-only" nature was only an instruction. Here
a read agent's `bash` runs inside `bwrap` (Debian package `bubblewrap`), and what
the command can see and do is decided by a [`SandboxPolicy`][corral.agent.tools.SandboxPolicy]:

* **A built file-system view, not the host's.** The sandbox root is an empty
  tmpfs. Into it go, read-only: the system directories (`/usr`, `/bin`, `/sbin`,
  `/lib*`, `/etc`, `/opt`, `/nix`), the Python running corral, the directories on
  `PATH`, the policy's extra read paths, and the project (the git work tree
  holding the working directory, with its git common directory, else the working
  directory itself). `/tmp`, `/run`, `/var`, `/home`, `$HOME`,
  `$XDG_RUNTIME_DIR` and `$CORRAL_HOME` are not there, so the Unix sockets that
  live in them (tmux servers, corral's own tmux server, docker, ssh-agent,
  D-Bus, X11) cannot even be named. Credential files and directories (`~/.ssh`,
  `~/.aws`, … see `CREDENTIAL_PATHS`), corral's data and config directories and
  `/etc`'s secrets are covered by empty read-only mounts wherever a bound
  directory would show them (e.g. a project under `$HOME`).
* **No Unix sockets at all.** A seccomp filter makes `socket(AF_UNIX, …)` and a
  datagram `socketpair` fail with `EACCES` and io_uring (which makes and connects
  sockets without those calls) fail with `ENOSYS`, so a socket file that sits
  inside a bound directory (a project's `.git/fsmonitor--daemon.ipc`, a tmux
  server's socket, say) is unreachable too. A stream `socketpair` still works: it
  is connected to itself for life. No socket descriptor is inherited. The filter
  also refuses system calls of a foreign architecture (32-bit binaries on a
  64-bit host) and the x32 ABI, which could otherwise bypass it.
* **A private, size-capped `/tmp`.** A tmpfs of `tmp_mib` MiB, empty for each
  command and gone after it; `$TMPDIR` is `/tmp`. Nothing is created on the host.
  `/dev/shm` is a second such tmpfs; the rest of `/dev` (bwrap's minimal one) and
  the root are read-only.
* **Namespaces.** `--unshare-net` (no network; only a private loopback),
  `--unshare-pid` (no signals to or view of host processes; everything the
  command starts dies with it), `--unshare-ipc`, `--unshare-uts`, a user and a
  cgroup namespace where the kernel allows, `--cap-drop ALL`, `--new-session` (no
  TIOCSTI into the terminal), `--die-with-parent`.
* **Limits.** Inside the sandbox `prlimit` (util-linux; else a tiny Python
  launcher) sets `RLIMIT_NPROC` (`max_processes`), `RLIMIT_DATA` (`memory_mib`,
  per process) and no core files before it execs the command. The kernel never applies `RLIMIT_NPROC` to real
  root, so when corral runs as root each command also gets its own `pids` cgroup
  (v1 or v2) with `pids.max`; a leftover cgroup of a killed host is removed the
  next time one is made.
* **An allowlisted environment.** Only the names on `SANDBOX_ENV_ALLOWLIST` (`PATH`,
  `HOME`, `LANG`, `LC_*`, `TERM`, … and toolchain locations) reach the command, with
  `TMPDIR=/tmp`, plus the names the policy passes through; every other variable,
  whatever its name (`API_KEY`, `PGPASSWORD`, `DATABASE_URL`, …), is left out.

`ReadOnlySandbox.probe()` runs a tiny command through exactly this and checks that
it worked: the command ran, `$TMPDIR` was writable, and the working directory was
not. When it fails (no `bwrap`, no namespaces, not Linux) the status says why;
nothing here raises for an unusable sandbox.

The builder is policy-driven so a later write sandbox (the project writable, the
rest read-only) reuses it by setting `SandboxPolicy.writable_project`.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import errno
import fnmatch
import functools
import itertools
import os
import platform
import shutil
import struct
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from corral._paths import config_home, corral_home
from corral._process import pid_alive
from corral.agent._tool import ToolError

if TYPE_CHECKING:
    from corral.settings import Settings

__all__ = [
    "CREDENTIAL_PATHS",
    "PROBE_TIMEOUT_SECONDS",
    "SANDBOX_ENV_ALLOWLIST",
    "CommandSandbox",
    "ReadGuard",
    "ReadOnlySandbox",
    "SandboxCommand",
    "SandboxLimits",
    "SandboxPolicy",
    "SandboxStatus",
    "read_sandbox_policy",
    "sandbox_environment",
]

PROBE_TIMEOUT_SECONDS = 10.0
"""How long the probe command may take before the sandbox counts as not working."""

SANDBOX_ENV_ALLOWLIST: tuple[str, ...] = (
    # the shell and the terminal
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "PWD",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "COLUMNS",
    "LINES",
    # locale and time
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TZ",
    # toolchains: where they are, never how to log in anywhere
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "PYTHONPATH",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONIOENCODING",
    "PYTHONUNBUFFERED",
    "JAVA_HOME",
    "GOROOT",
    "GOPATH",
    "CARGO_HOME",
    "RUSTUP_HOME",
    "NODE_PATH",
)
"""The environment variables a read agent's command gets (names, case-sensitive; `LC_*` is a pattern);
`$TMPDIR` is set to `/tmp` and `SandboxPolicy.env_passthrough` adds names. Everything else — any API
key, token, password, database URL, agent socket — is left out, whatever its name."""

CREDENTIAL_PATHS: tuple[str, ...] = (
    ".ssh",
    ".aws",
    ".gnupg",
    ".config/gh",
    ".config/hub",
    ".config/gcloud",
    ".config/op",
    ".config/git/credentials",
    ".config/rclone",
    ".config/google-chrome",
    ".config/chromium",
    ".mozilla",
    ".azure",
    ".kube",
    ".docker",
    ".netrc",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
    ".pgpass",
    ".vault-token",
    ".password-store",
    ".terraform.d",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".local/share/keyrings",
    # coding agents' keys, tokens and transcripts
    ".claude",
    ".claude.json",
    ".claude.json.backup",
    ".codex",
    ".gemini",
    ".pi",
    ".config/opencode",
    ".local/share/opencode",
    ".config/goose",
    ".local/share/goose",
    ".config/github-copilot",
    ".aider",
    # shell and REPL history (commands typed with passwords and tokens in them)
    ".bash_history",
    ".zsh_history",
    ".zhistory",
    ".histfile",
    ".sh_history",
    ".local/share/fish/fish_history",
    ".python_history",
    ".psql_history",
    ".mysql_history",
    ".sqlite_history",
    ".node_repl_history",
    ".irb_history",
    ".rediscli_history",
    ".lesshst",
    ".viminfo",
)
"""Paths under `$HOME` that are never visible in the sandbox, even when a bound directory holds them."""

_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/nix")
_ETC_SECRETS = (
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/ssh",
    "/etc/ssl/private",
    "/etc/security/opasswd",
)
_SANDBOX_TMP = "/tmp"
_PROBE_MARK = "corral-sandbox-ok"
_INSTALL_HINT = "install the bubblewrap package (e.g. `apt-get install bubblewrap`)"
_CGROUP_PREFIX = "corral-sandbox-"

# Inside the sandbox: set the limits, then become the command. `-I -S`: nothing from the project or
# the environment can change what this runs.
_LAUNCHER = (
    "import os, resource, sys\n"
    "n, d = int(sys.argv[1]), int(sys.argv[2])\n"
    "resource.setrlimit(resource.RLIMIT_NPROC, (n, n))\n"
    "resource.setrlimit(resource.RLIMIT_DATA, (d, d))\n"
    "resource.setrlimit(resource.RLIMIT_CORE, (0, 0))\n"
    "os.execv(sys.argv[3], sys.argv[3:])\n"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxLimits:
    """Resource caps for one sandboxed command."""

    tmp_mib: int = 512
    """Size of the private `/tmp` (MiB)."""
    max_processes: int = 256
    """Processes and threads the command may have at once."""
    memory_mib: int = 4096
    """Data memory (heap and private writable mappings) each process may use (MiB)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxPolicy:
    """What a sandboxed command can see and do; the one input of the bubblewrap builder."""

    writable_project: bool = False
    """Bind the project writable (the seam for a write sandbox); read agents: `False`."""
    read_paths: tuple[Path, ...] = ()
    """Extra directories bound read-only (toolchains outside the system directories)."""
    hidden_paths: tuple[Path, ...] = ()
    """Extra paths never visible, besides `CREDENTIAL_PATHS`, `$CORRAL_HOME` and corral's config."""
    secret_env: tuple[str, ...] = ()
    """Variable names removed even when the allowlist holds them (the providers' key variables)."""
    env_passthrough: tuple[str, ...] = ()
    """Variable names kept besides `SANDBOX_ENV_ALLOWLIST`, also when `secret_env` names them (exact,
    case-sensitive names: the user listed them on purpose)."""
    read_files: tuple[Path, ...] = ()
    """Single files shown read-only even inside a hidden directory (a read agent's session-context
    snapshot under `$CORRAL_HOME`)."""
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    """Resource caps."""


def read_sandbox_policy(settings: Settings) -> SandboxPolicy:
    """The read agents' policy from the `[teams]` sandbox settings (and the providers' key variables)."""
    teams = settings.teams
    keys = {"ANTHROPIC_API_KEY", "OPENAI_API_KEY"}
    keys.update(p.api_key_env for p in settings.providers.values() if p.api_key_env)
    return SandboxPolicy(
        read_paths=tuple(Path(p).expanduser() for p in teams.sandbox_read_paths),
        secret_env=tuple(sorted(keys)),
        env_passthrough=tuple(teams.sandbox_env_passthrough),
        limits=SandboxLimits(
            tmp_mib=teams.sandbox_tmp_mib,
            max_processes=teams.sandbox_max_processes,
            memory_mib=teams.sandbox_memory_mib,
        ),
    )


def sandbox_environment(policy: SandboxPolicy, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The part of `environ` (default `os.environ`) a sandboxed command gets, with `TMPDIR=/tmp`.

    That is the names on `SANDBOX_ENV_ALLOWLIST` minus the policy's `secret_env`, plus the names
    in its `env_passthrough`.
    """
    source = os.environ if environ is None else environ
    keep = set(policy.env_passthrough)
    secret = set(policy.secret_env)

    def allowed(name: str) -> bool:
        if name in keep:
            return True
        return name not in secret and any(fnmatch.fnmatchcase(name, p) for p in SANDBOX_ENV_ALLOWLIST)

    env = {k: v for k, v in source.items() if allowed(k)}
    env["TMPDIR"] = _SANDBOX_TMP
    return env


@dataclass(slots=True)
class SandboxCommand:
    """A command ready to start confined: its argv, environment and inherited fds; `close()` after it ends."""

    argv: list[str]
    """The full command line (`bwrap … -- <launcher> <argv>`)."""
    env: dict[str, str]
    """The environment to start it with (secrets removed)."""
    pass_fds: tuple[int, ...] = ()
    """File descriptors the child must inherit (the seccomp filter)."""
    _cleanups: list[Callable[[], None]] = field(default_factory=list)

    def close(self) -> None:
        """Release what was made for the command (fds, its cgroup); call once it has ended."""
        while self._cleanups:
            with contextlib.suppress(OSError):
                self._cleanups.pop()()


class CommandSandbox(Protocol):
    """Something that makes a command line run confined (what `BashTool` accepts)."""

    description: str
    """One sentence for the tool description, telling the model what the confinement allows."""

    def prepare(self, argv: list[str], cwd: Path) -> SandboxCommand:
        """The confined command that runs `argv` in `cwd`."""
        ...

    def explain(self, output: str) -> str | None:
        """A line naming the limit a failed command most likely hit, from its output (else `None`)."""
        ...

    def read_guard(self, cwd: Path) -> ReadGuard:
        """What the in-process read tools working in `cwd` may open (the same view as the commands)."""
        ...


@dataclass(frozen=True, slots=True)
class SandboxStatus:
    """Whether the sandbox works here, and why (or why not)."""

    ok: bool
    """`True` when the probe proved the sandbox is enforced."""
    reason: str
    """One line: what works, or what is missing and how to fix it."""


class ReadOnlySandbox:
    """The bubblewrap sandbox of read agents (see the module docstring for what it confines).

    Args:
        bwrap: Path of the `bwrap` binary (default: `bwrap` found on `PATH`).
        policy: What commands can see and do (default: `SandboxPolicy()`, read-only).
    """

    def __init__(self, bwrap: str | None = None, *, policy: SandboxPolicy | None = None) -> None:
        self.bwrap: str | None = bwrap or shutil.which("bwrap")
        """The `bwrap` binary, or `None` when it is not installed."""
        self.policy = policy or SandboxPolicy()
        """What commands can see and do."""
        self._status: SandboxStatus | None = None
        self._views: dict[Path, tuple[tuple[object, ...], _View]] = {}
        self._seccomp = _unix_socket_filter()
        self._cgroups = _PidsCgroups.find() if os.geteuid() == 0 else None
        # util-linux's `prlimit` sets the limits in about a millisecond; Python takes tens.
        self._prlimit = shutil.which("prlimit", path="/usr/bin:/bin")
        limits = self.policy.limits
        self.description = (
            "Commands run in a read-only sandbox: the project and system directories can be read but not changed, "
            f"only $TMPDIR (/tmp, private to each command, {limits.tmp_mib} MiB) is writable, there is no "
            f"network and no access to other processes, at most {limits.max_processes} processes and "
            f"{limits.memory_mib} MiB of memory per process; home directories, credentials and secret "
            "environment variables are not available."
        )
        """One sentence for the tool description."""

    @property
    def status(self) -> SandboxStatus | None:
        """The result of the last `probe()`, or `None` before the first."""
        return self._status

    def with_policy(self, policy: SandboxPolicy) -> ReadOnlySandbox:
        """The same sandbox (binary, probe result, filter, cgroups) under another policy."""
        derived = copy.copy(self)
        derived.policy = policy
        derived._views = {}
        return derived

    def prepare(self, argv: list[str], cwd: Path) -> SandboxCommand:
        """The confined command that runs `argv` in `cwd` (what the module docstring describes).

        Args:
            argv: The command and its arguments.
            cwd: The working directory; the command sees it at the same path.
        """
        limits = self.policy.limits
        if self.bwrap is None or not os.access(self.bwrap, os.X_OK):
            raise FileNotFoundError(
                f"bwrap is not installed ({self.bwrap or 'not on PATH'}); {_INSTALL_HINT}"
            )
        command = SandboxCommand(self.wrap(argv, cwd), sandbox_environment(self.policy))
        if self._seccomp is not None:
            fd = os.memfd_create("corral-seccomp", os.MFD_CLOEXEC)
            command._cleanups.append(lambda: os.close(fd))
            os.write(fd, self._seccomp)
            os.lseek(fd, 0, os.SEEK_SET)
            command.pass_fds = (fd,)
            bwrap_end = command.argv.index("--")
            command.argv[bwrap_end:bwrap_end] = ["--seccomp", str(fd)]
        if self._cgroups is not None:
            procs, remove = self._cgroups.create(limits.max_processes)
            command._cleanups.append(remove)
            # The shell joins the cgroup, then becomes bwrap: nothing starts outside the limit.
            command.argv = ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', procs, *command.argv]
        return command

    def wrap(self, argv: list[str], cwd: Path) -> list[str]:
        """The `bwrap` command line for `argv` in `cwd`, without the seccomp filter and cgroup `prepare` adds.

        Raises:
            ValueError: `cwd` is `/` or holds `/tmp`, `/run` or a home directory (it cannot be shown
                without what the sandbox hides).
        """
        bwrap = self.bwrap or "bwrap"
        policy = self.policy
        limits = policy.limits
        cwd_text = os.path.abspath(cwd)
        view = self._view(Path(cwd_text))
        flags = ["--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
        flags += ["--unshare-cgroup-try", "--unshare-user-try", "--cap-drop", "ALL"]
        flags += ["--die-with-parent", "--new-session", *view.system_flags]
        size = str(limits.tmp_mib * 1024 * 1024)
        flags += ["--dev", "/dev", "--size", size, "--tmpfs", "/dev/shm", "--remount-ro", "/dev"]
        flags += ["--proc", "/proc", "--size", size, "--tmpfs", _SANDBOX_TMP]
        flags += ["--dir", "/var", "--symlink", "../tmp", "/var/tmp", *view.flags]
        flags += ["--remount-ro", "/"]  # the root tmpfs (the mount points' parents) is not writable either
        flags += ["--chdir", cwd_text, "--setenv", "TMPDIR", _SANDBOX_TMP]
        data = limits.memory_mib * 1024 * 1024
        if self._prlimit is not None:
            launcher = [self._prlimit, f"--nproc={limits.max_processes}", f"--data={data}", "--core=0", "--"]
        else:
            python = os.path.realpath(sys.executable)
            launcher = [python, "-I", "-S", "-c", _LAUNCHER, str(limits.max_processes), str(data)]
        return [bwrap, *flags, "--", *launcher, *argv]

    def sweep(self) -> int:
        """Remove the per-command cgroups that were still emptying when their command ended.

        Returns how many are still busy (always 0 when corral does not run as root). Each new
        command sweeps too, so calling this is only needed to be sure nothing is left.
        """
        return 0 if self._cgroups is None else self._cgroups.sweep()

    def read_guard(self, cwd: Path) -> ReadGuard:
        """The guard for a read agent's in-process tools working in `cwd`: they see what its `bash` sees.

        Raises:
            ValueError: `cwd` cannot be shown (as for `wrap`).
        """
        return ReadGuard(self._view(Path(os.path.abspath(cwd))))

    def _view(self, cwd: Path) -> _View:
        """The view of `cwd`, built again only when what it was built from changed.

        Building one costs ~4 ms of CPU (every queued read agent and every command built its own);
        checking its inputs — the project root, a linked work tree's `.git`, which hidden paths exist
        and where they lead, the shown files, `PATH`, and where each path it binds leads — costs a
        fraction of that, and a view whose inputs are unchanged is the view a new build would make.
        A hidden path created since (a new credentials directory) changes the inputs, so it is masked
        from the next command on; so does a bound path made a link to another directory (bwrap binds
        by name: the old view would show that directory without the masks it needs).
        """
        inputs = _view_inputs(self.policy, cwd)
        cached = self._views.get(cwd)
        if cached is not None and cached[0] == inputs and cached[1].binds_as_built():
            return cached[1]
        view = _View(self.policy, cwd)
        self._views[cwd] = (inputs, view)
        return view

    def explain(self, output: str) -> str | None:
        """A line naming the sandbox limit a failed command most likely hit (from its output)."""
        limits = self.policy.limits
        lowered = output.lower()
        if "no space left on device" in lowered or "disk quota exceeded" in lowered:
            return (
                f"Sandbox limit: the private temp dir is full ({limits.tmp_mib} MiB, "
                "setting teams.sandbox_tmp_mib)."
            )
        if "resource temporarily unavailable" in lowered or "fork: retry" in lowered:
            return (
                f"Sandbox limit: at most {limits.max_processes} processes "
                "(setting teams.sandbox_max_processes)."
            )
        if "cannot allocate memory" in lowered or "memoryerror" in lowered or "out of memory" in lowered:
            return (
                f"Sandbox limit: at most {limits.memory_mib} MiB of memory per process "
                "(setting teams.sandbox_memory_mib)."
            )
        if "permission denied" in lowered and "socket" in lowered:
            return "Sandbox: Unix sockets and the network are not available to read agents."
        return None

    async def probe(self) -> SandboxStatus:
        """Run a tiny command in the sandbox and check that it is enforced.

        The command must run, write to the private `$TMPDIR`, and fail to write to its
        (fresh) working directory. The result is also kept in `status`. Never raises
        for an unusable sandbox: the status says why.
        """
        self._status = await self._probe()
        return self._status

    async def _probe(self) -> SandboxStatus:
        if not sys.platform.startswith("linux"):
            return SandboxStatus(False, f"the bubblewrap sandbox needs Linux (this is {sys.platform})")
        if self.bwrap is None:
            return SandboxStatus(False, f"bwrap was not found on PATH; {_INSTALL_HINT}")
        _remove_old_scratch_dirs()
        outside = Path(tempfile.mkdtemp(prefix="corral-sandbox-probe-"))
        target = outside / "written"
        script = f'echo {_PROBE_MARK} > "$TMPDIR/probe" && cat "$TMPDIR/probe" && ! (echo x > "{target}") 2>/dev/null'
        command: SandboxCommand | None = None
        try:
            try:
                command = self.prepare(["/bin/sh", "-c", script], outside)
            except OSError as exc:
                return SandboxStatus(False, f"the sandbox cannot be prepared: {exc}")
            try:
                process = await asyncio.create_subprocess_exec(
                    *command.argv,
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE,
                    env=command.env,
                    pass_fds=command.pass_fds,
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
            limits = self.policy.limits
            extras = "" if self._seccomp is not None else "; no seccomp filter for this architecture"
            return SandboxStatus(
                True,
                f"bubblewrap sandbox works ({self.bwrap}): read-only project and system, no home, "
                f"sockets or network, private {limits.tmp_mib} MiB $TMPDIR, "
                f"{limits.max_processes} processes{extras}",
            )
        finally:
            if command is not None:
                command.close()
            shutil.rmtree(outside, ignore_errors=True)


# --- the file-system view ---------------------------------------------------------------------


class _View:
    """The file-system view for one working directory: its bind and mask flags, in mount order.

    `bound` pairs each host real path with where it appears; `hidden` holds the real paths the
    masks cover. The read agents' path guard asks the same object, so the tools that run in
    corral's own process see exactly what `bash` sees.
    """

    def __init__(self, policy: SandboxPolicy, cwd: Path) -> None:
        self.bound: list[tuple[Path, Path]] = []
        self.hidden: list[Path] = []
        self.system_flags: list[str] = []
        self.flags: list[str] = []
        project = _project_root(cwd)
        _check_bindable(project)
        for directory in _SYSTEM_DIRS:
            self._system(directory)
        for extra in _toolchain_dirs(policy.read_paths):
            self._bind(extra)
        for git_dir in _git_dirs(project):
            self._bind(git_dir)
        self._bind(project, writable=policy.writable_project)
        for hidden in _hidden_paths(policy.hidden_paths):
            self._mask(hidden)
        for file in policy.read_files:  # after the masks: shown even inside a hidden directory
            if file.is_file():
                self.flags += ["--ro-bind", os.path.realpath(file), str(file)]
                self.bound.append((Path(os.path.realpath(file)), file))

    def binds_as_built(self) -> bool:
        """Whether every path the view binds still resolves to the directory or file it bound."""
        return all(os.path.realpath(dest) == str(source) for source, dest in self.bound)

    def _system(self, directory: str) -> None:
        if os.path.islink(directory):  # merged /usr: /bin -> usr/bin
            self.system_flags += ["--symlink", os.readlink(directory), directory]
        elif os.path.isdir(directory):
            self.system_flags += ["--ro-bind", directory, directory]
            self.bound.append((Path(os.path.realpath(directory)), Path(directory)))

    def shows(self, path: Path | str) -> bool:
        """Whether the host path `path` (symlinks resolved) is visible in the view.

        It is when a bound path holds it and no mask inside that bound path covers it.
        """
        real = Path(os.path.realpath(path))
        return any(
            real.is_relative_to(source)
            and not any(real.is_relative_to(h) and h.is_relative_to(source) for h in self.hidden)
            for source, _ in self.bound
        )

    def _bind(self, path: Path, *, writable: bool = False) -> None:
        if not writable and self.shows(path):
            return
        self.flags += ["--bind" if writable else "--ro-bind", os.path.realpath(path), str(path)]
        self.bound.append((Path(os.path.realpath(path)), path))

    def _mask(self, hidden: Path) -> None:
        """Cover `hidden` wherever a bound directory shows it: an empty read-only dir, or /dev/null."""
        if not os.path.lexists(hidden):
            return
        real = Path(os.path.realpath(hidden))
        is_dir = real.is_dir()
        for source, dest in list(self.bound):
            if not real.is_relative_to(source):
                continue
            where = str(dest / real.relative_to(source))
            if is_dir:
                self.flags += ["--tmpfs", where, "--remount-ro", where]
            else:
                self.flags += ["--ro-bind", "/dev/null", where]
        self.hidden.append(real)


class ReadGuard:
    """What the read agents' in-process tools (`read`, `grep`, `find`, `ls`) may open: the sandbox's view."""

    def __init__(self, view: _View) -> None:
        self._view = view

    def check(self, path: Path) -> None:
        """Raise `ToolError` unless `path` is visible in the sandbox.

        Raises:
            ToolError: The path is outside the view or hidden (credentials, `$HOME`, corral's data).
        """
        if not self._view.shows(path):
            raise ToolError(
                f"{path} is not available to read agents: they see only the project, the system and "
                "toolchain directories (credentials, home directories, temp dirs and corral's data are "
                "hidden; see docs/security.md)."
            )

    def walk_skip(self, root: Path) -> Callable[[str], bool] | None:
        """For a walk from `root` (which never follows links): the hidden paths under it, or `None`."""
        real_root = Path(os.path.realpath(root))
        inside = {
            os.path.join(root, hidden.relative_to(real_root))
            for hidden in self._view.hidden
            if hidden.is_relative_to(real_root)
        }
        return inside.__contains__ if inside else None


def _socket_roots() -> list[Path]:
    """Directories where sockets live: never bound, nor anything above them."""
    roots = [Path(p) for p in ("/tmp", "/var/tmp", "/run", "/var/run", "/dev/shm")]
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        roots.append(Path(runtime))
    return [Path(os.path.realpath(root)) for root in roots]


def _check_bindable(project: Path) -> None:
    """Refuse a project directory that would show every socket or every home directory."""
    real = Path(os.path.realpath(project))
    home = Path(os.path.realpath(Path.home()))
    for root in [*_socket_roots(), home]:
        if root.is_relative_to(real) and not (root == home == real):
            raise ValueError(
                f"the read sandbox cannot show {project} (it contains {root}); "
                "run the agent in a project directory"
            )


def _view_inputs(policy: SandboxPolicy, cwd: Path) -> tuple[object, ...]:
    """What `_View(policy, cwd)` is built from that can change while corral runs (see `_view`).

    Every queued read agent and every sandboxed command checks these, so they are read with plain
    `os.path` calls on strings (a `pathlib` version cost ~1.3 ms, most of it making ~60 `Path`s).
    """
    project = _project_root(cwd)
    dot_git = project / ".git"
    linked: str | None = None
    if dot_git.is_file():
        with contextlib.suppress(OSError):
            linked = dot_git.read_text(errors="replace")
    lexists, realpath = os.path.lexists, os.path.realpath
    hidden = tuple(realpath(path) if lexists(path) else None for path in _hidden_names(policy.hidden_paths))
    shown = tuple(file.is_file() for file in policy.read_files)
    return (project, linked, hidden, shown, os.environ.get("PATH", ""))


def _project_root(cwd: Path) -> Path:
    """The git work tree holding `cwd` (not `$HOME` or above), else `cwd`."""
    home = os.path.realpath(Path.home())
    for candidate in (cwd, *cwd.parents):
        real = os.path.realpath(candidate)
        if home == real or home.startswith(real if real.endswith("/") else f"{real}/"):
            break
        if os.path.exists(os.path.join(candidate, ".git")):
            return candidate
    return cwd


def _git_dirs(project: Path) -> list[Path]:
    """The git common directory of a linked work tree (its `.git` is a file), so `git` works inside."""
    dot_git = project / ".git"
    if not dot_git.is_file():
        return []
    try:
        text = dot_git.read_text(errors="replace").strip()
    except OSError:
        return []
    if not text.startswith("gitdir:"):
        return []
    git_dir = (project / text.removeprefix("gitdir:").strip()).resolve()
    common = git_dir
    with contextlib.suppress(OSError):
        common = (git_dir / (git_dir / "commondir").read_text().strip()).resolve()
    return [common] if common.is_dir() else []


def _toolchain_dirs(extra: Iterable[Path]) -> list[Path]:
    """The Python running corral, the `PATH` directories and `extra`, minus any that hold what stays hidden."""
    candidates = [Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix), *extra]
    candidates += [Path(p) for p in os.environ.get("PATH", "").split(os.pathsep) if p]
    above = [*_socket_roots(), Path(os.path.realpath(Path.home())), Path(os.path.realpath(corral_home()))]
    chosen: list[Path] = []
    for candidate in candidates:
        if not candidate.is_absolute() or not candidate.is_dir() or candidate in chosen:
            continue
        real = Path(os.path.realpath(candidate))
        if not any(root.is_relative_to(real) for root in above):
            chosen.append(candidate)
    return chosen


def _hidden_paths(extra: Iterable[Path]) -> list[Path]:
    """What the sandbox never shows: the credential paths under `$HOME`, corral's data and
    configuration, the system's secrets, and `extra`."""
    return [Path(name) for name in _hidden_names(extra)]


def _hidden_names(extra: Iterable[Path]) -> list[str]:
    """`_hidden_paths` as strings."""
    return [
        *_credential_names(str(Path.home())),
        str(corral_home()),
        str(config_home()),
        *_ETC_SECRETS,
        *map(str, extra),
    ]


@functools.lru_cache(maxsize=4)
def _credential_names(home: str) -> tuple[str, ...]:
    """`CREDENTIAL_PATHS` under `home`."""
    return tuple(str(Path(home) / relative) for relative in CREDENTIAL_PATHS)


# --- seccomp: no AF_UNIX sockets ----------------------------------------------------------------

_AUDIT_ARCH = {"x86_64": (0xC000003E, 41, 53), "aarch64": (0xC00000B7, 198, 199)}
"""`platform.machine()` → (AUDIT_ARCH_*, the `socket` and `socketpair` system calls' numbers)."""

_IO_URING = (425, 427)
"""`io_uring_setup`, `io_uring_enter`, `io_uring_register`: the same numbers on every architecture."""

_AF_UNIX = 1
_STREAM_TYPES = (1, 5)
"""`SOCK_STREAM`, `SOCK_SEQPACKET`: socketpair types that stay connected to each other for life."""


def _unix_socket_filter() -> bytes | None:
    """A classic-BPF seccomp program that leaves a command no way to a Unix socket it did not make.

    * `socket(AF_UNIX, …)` fails with `EACCES`.
    * `socketpair` fails with `EACCES` unless its type is `SOCK_STREAM` or `SOCK_SEQPACKET`: such a
      pair is connected to itself for life (`connect`, and `sendto`/`sendmsg` with an address,
      fail with `EISCONN`), while a `SOCK_DGRAM` one could send to, or connect to, any socket path.
      Stream pairs stay because asyncio's event loop and many test suites need them.
    * `io_uring_setup`, `io_uring_enter` and `io_uring_register` fail with `ENOSYS` (what a kernel
      without io_uring says, so programs fall back to plain system calls): io_uring makes sockets
      (`IORING_OP_SOCKET`) and connects them without any system call this filter could check.
    * System calls of a foreign architecture (32-bit binaries) and the x32 ABI fail with `ENOSYS`.

    With no AF_UNIX socket of its own that reaches anything, a command could only use one it
    inherits; `BashTool` starts it with stdin from `/dev/null`, its output to a pipe and every
    other descriptor closed, and bwrap adds only its own non-socket descriptors. `None` on an
    architecture this does not know.
    """
    arch = _AUDIT_ARCH.get(platform.machine())
    if arch is None or not sys.platform.startswith("linux"):
        return None
    audit_arch, socket_nr, socketpair_nr = arch
    ld, jeq, jge, jgt, and_k, ret = 0x20, 0x15, 0x35, 0x25, 0x54, 0x06
    allow, deny_socket = 0x7FFF0000, 0x00050000 | errno.EACCES
    deny_abi = 0x00050000 | errno.ENOSYS
    # (label, (code, true target, false target, k)); targets are labels, None = the next instruction.
    program: list[tuple[str, tuple[int, str | None, str | None, int]]] = [
        ("", (ld, None, None, 4)),  # arch
        ("", (jeq, None, "enosys", audit_arch)),
        ("", (ld, None, None, 0)),  # system call number
        ("", (jge, "enosys", None, 0x40000000)),  # x32 ABI
        ("", (jeq, "socket", None, socket_nr)),
        ("", (jeq, "socketpair", None, socketpair_nr)),
        ("", (jge, None, "allow", _IO_URING[0])),
        ("", (jgt, "allow", "enosys", _IO_URING[1])),
        ("socket", (ld, None, None, 16)),  # args[0] (low 32 bits): the domain
        ("", (jeq, "eacces", "allow", _AF_UNIX)),
        ("socketpair", (ld, None, None, 24)),  # args[1] (low 32 bits): the type and its flags
        ("", (and_k, None, None, 0xF)),  # SOCK_NONBLOCK and SOCK_CLOEXEC off
        ("", (jeq, "allow", None, _STREAM_TYPES[0])),
        ("", (jeq, "allow", "eacces", _STREAM_TYPES[1])),
        ("allow", (ret, None, None, allow)),
        ("enosys", (ret, None, None, deny_abi)),
        ("eacces", (ret, None, None, deny_socket)),
    ]
    where = {label: i for i, (label, _) in enumerate(program) if label}

    def jump(at: int, target: str | None) -> int:
        return 0 if target is None else where[target] - at - 1

    code = b""
    for at, (_, (op, true, false, k)) in enumerate(program):
        code += struct.pack("=HBBI", op, jump(at, true), jump(at, false), k)
    return code


# --- cgroups: a process limit that also binds root ----------------------------------------------


class _PidsCgroups:
    """Per-command `pids` cgroups under a writable v1 or v2 hierarchy (used when corral runs as root)."""

    _counter = itertools.count()

    def __init__(self, parent: Path) -> None:
        self.parent = parent
        self._pending: set[Path] = set()

    @classmethod
    def find(cls) -> _PidsCgroups | None:
        v1 = Path("/sys/fs/cgroup/pids")
        v2 = Path("/sys/fs/cgroup")
        for parent in (v1, v2):
            if parent == v2:
                try:
                    if "pids" not in (v2 / "cgroup.controllers").read_text().split():
                        continue
                    if "pids" not in (v2 / "cgroup.subtree_control").read_text().split():
                        (v2 / "cgroup.subtree_control").write_text("+pids")
                except OSError:
                    continue
            if (parent / "cgroup.procs").exists() and os.access(parent, os.W_OK):
                found = cls(parent)
                found.remove_stale()
                return found
        return None

    def remove_stale(self) -> None:
        """Remove the cgroups of corral processes that are gone (a killed host leaves its last ones)."""
        for stale in self.parent.glob(f"{_CGROUP_PREFIX}*"):
            owner = stale.name.removeprefix(_CGROUP_PREFIX).split("-")[0]
            if not owner.isdigit() or pid_alive(int(owner)):
                continue
            with contextlib.suppress(OSError):
                stale.rmdir()

    def create(self, max_processes: int) -> tuple[str, Callable[[], None]]:
        """A new cgroup with `pids.max`: its `cgroup.procs` path and its remover."""
        self.sweep()
        path = self.parent / f"{_CGROUP_PREFIX}{os.getpid()}-{next(self._counter)}"
        path.mkdir(mode=0o700)
        try:
            (path / "pids.max").write_text(str(max_processes))
        except OSError:
            path.rmdir()
            raise
        return str(path / "cgroup.procs"), lambda: self._remove(path)

    def _remove(self, path: Path) -> None:
        # The pid namespace ends with bwrap, but its last processes may still be exiting: a busy
        # cgroup is retried by the next `create` or `sweep`.
        try:
            path.rmdir()
        except FileNotFoundError:
            pass
        except OSError:
            self._pending.add(path)

    def sweep(self) -> int:
        """Retry removing this process's cgroups that were still busy; how many remain."""
        for path in list(self._pending):
            with contextlib.suppress(OSError):
                path.rmdir()
            if not path.exists():
                self._pending.discard(path)
        return len(self._pending)


def _remove_old_scratch_dirs() -> None:
    """Empty `corral-sandbox-tmp-*` mount points earlier versions left in the host's temp dir."""
    for old in Path(tempfile.gettempdir()).glob("corral-sandbox-tmp-*"):
        with contextlib.suppress(OSError):
            if old.stat().st_uid == os.geteuid():
                old.rmdir()


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""
