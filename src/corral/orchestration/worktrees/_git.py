"""Git through argv subprocesses: the one place the worktrees feature runs `git`.

Every call is an argv list (never a shell string) with a scrubbed environment:
`GIT_DIR`, `GIT_WORK_TREE`, `GIT_INDEX_FILE` and friends inherited from a hook
or a wrapper would point git at the wrong repository, so they are removed;
`LC_ALL=C` keeps messages parseable and `GIT_TERMINAL_PROMPT=0` keeps git from
ever waiting for a password. Commits corral makes are authored and committed by
`corral <corral@localhost>`, with hooks skipped (they are corral's own
bookkeeping commits, not the user's).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from corral.orchestration.errors import InternalFailureError, InvalidRequestError

__all__ = [
    "CORRAL_AUTHOR",
    "GitBytes",
    "GitError",
    "GitOutput",
    "NotAGitRepositoryError",
    "git",
    "git_bytes",
    "git_env",
    "is_ancestor",
    "repo_toplevel",
    "rev_parse",
]

CORRAL_AUTHOR = ("corral", "corral@localhost")
"""Name and e-mail of every commit corral makes."""

_SCRUBBED = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_CEILING_DIRECTORIES",
    "GIT_PREFIX",
)


class GitError(InternalFailureError):
    """A git command failed in a way corral did not expect; the message carries git's own words."""


class NotAGitRepositoryError(InvalidRequestError):
    """`isolation = "worktree"` was asked for outside a git repository (or in one without commits)."""


@dataclass(frozen=True, slots=True)
class GitOutput:
    """What one git command printed."""

    returncode: int
    """The exit status."""
    stdout: str
    """Standard output (UTF-8, undecodable bytes replaced)."""
    stderr: str
    """Standard error, stripped."""


def git_env(*, index_file: Path | None = None, as_corral: bool = False) -> dict[str, str]:
    """The environment for one git call: scrubbed, C locale, no prompts.

    Args:
        index_file: Use this index instead of the repository's (`GIT_INDEX_FILE`).
        as_corral: Author and commit as corral.
    """
    env = {key: value for key, value in os.environ.items() if key not in _SCRUBBED}
    env["LC_ALL"] = "C"
    env["GIT_TERMINAL_PROMPT"] = "0"
    env.pop("GIT_EDITOR", None)
    if index_file is not None:
        env["GIT_INDEX_FILE"] = str(index_file)
    if as_corral:
        name, email = CORRAL_AUTHOR
        env.update(
            GIT_AUTHOR_NAME=name,
            GIT_AUTHOR_EMAIL=email,
            GIT_COMMITTER_NAME=name,
            GIT_COMMITTER_EMAIL=email,
        )
    return env


def _git_binary() -> str:
    found = shutil.which("git")
    if found is None:
        raise NotAGitRepositoryError(
            'git is not installed; isolation = "worktree" needs git on PATH (or use isolation = "shared").'
        )
    return found


def git(
    cwd: Path,
    *args: str,
    check: bool = True,
    ok: tuple[int, ...] = (0,),
    env: dict[str, str] | None = None,
    stdin: str | None = None,
) -> GitOutput:
    """Run `git <args>` in `cwd` and return its output.

    Args:
        cwd: The directory git runs in.
        *args: The arguments after `git`.
        check: Raise `GitError` when the exit status is not in `ok`.
        ok: Exit statuses that are not failures (e.g. `(0, 1)` for `merge-tree`).
        env: The environment (default `git_env()`).
        stdin: Text fed to standard input.

    Raises:
        GitError: The command failed (`check`), or git could not be started.
    """
    argv = [_git_binary(), "-c", "core.quotepath=off", *args]
    try:
        done = subprocess.run(
            argv,
            cwd=cwd,
            env=env if env is not None else git_env(),
            input=stdin.encode() if stdin is not None else None,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            capture_output=True,
            check=False,
        )
    except OSError as exc:
        raise GitError(f"Cannot run git in {cwd}: {exc.strerror or exc}.") from exc
    output = GitOutput(
        returncode=done.returncode,
        stdout=done.stdout.decode("utf-8", "replace"),
        stderr=done.stderr.decode("utf-8", "replace").strip(),
    )
    if check and output.returncode not in ok:
        command = " ".join(args[:2])
        raise GitError(
            f"git {command} failed in {cwd} (exit {output.returncode}): {output.stderr or output.stdout}"
        )
    return output


@dataclass(frozen=True, slots=True)
class GitBytes:
    """What one git command printed, its standard output kept as bytes (packs, binary patches)."""

    returncode: int
    """The exit status."""
    stdout: bytes
    """Standard output, raw."""
    stderr: str
    """Standard error, stripped."""


def git_bytes(
    cwd: Path,
    *args: str,
    stdin: bytes | None = None,
    ok: tuple[int, ...] = (0,),
    check: bool = True,
    env: dict[str, str] | None = None,
) -> GitBytes:
    """Run `git <args>` in `cwd` with raw bytes in and out; like `git`, for binary data.

    Raises:
        GitError: The command failed (`check` and an exit status not in `ok`), or git could not start.
    """
    argv = [_git_binary(), "-c", "core.quotepath=off", *args]
    try:
        done = subprocess.run(
            argv,
            cwd=cwd,
            env=env if env is not None else git_env(),
            input=stdin,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            capture_output=True,
            check=False,
        )
    except OSError as exc:
        raise GitError(f"Cannot run git in {cwd}: {exc.strerror or exc}.") from exc
    output = GitBytes(done.returncode, done.stdout, done.stderr.decode("utf-8", "replace").strip())
    if check and output.returncode not in ok:
        raise GitError(
            f"git {' '.join(args[:2])} failed in {cwd} (exit {output.returncode}): {output.stderr}"
        )
    return output


def repo_toplevel(cwd: Path) -> Path:
    """The top of the working tree that holds `cwd`.

    Raises:
        NotAGitRepositoryError: `cwd` is not inside a git working tree, or the repository has no
            commit yet.
    """
    if not cwd.is_dir():
        raise NotAGitRepositoryError(
            f'{cwd} is not a directory; isolation = "worktree" needs a git working tree.'
        )
    found = git(cwd, "rev-parse", "--show-toplevel", check=False)
    if found.returncode != 0 or not found.stdout.strip():
        raise NotAGitRepositoryError(
            f'{cwd} is not inside a git repository; isolation = "worktree" needs one '
            '(run `git init` and commit, or use isolation = "shared").'
        )
    top = Path(found.stdout.strip())
    if git(top, "rev-parse", "--verify", "--quiet", "HEAD^{commit}", check=False).returncode != 0:
        raise NotAGitRepositoryError(
            f'The git repository at {top} has no commit yet; isolation = "worktree" branches from HEAD '
            '(make a first commit, or use isolation = "shared").'
        )
    return top


def rev_parse(repo: Path, rev: str) -> str:
    """The full object id `rev` names in `repo` (raises `GitError` when it names nothing)."""
    return git(repo, "rev-parse", "--verify", "--quiet", rev).stdout.strip()


def is_ancestor(repo: Path, ancestor: str, descendant: str) -> bool:
    """Whether commit `ancestor` is reachable from `descendant` (a commit is its own ancestor)."""
    return git(repo, "merge-base", "--is-ancestor", ancestor, descendant, ok=(0, 1)).returncode == 0
