"""Source fingerprints: what an assigned check observed of the repository.

A fingerprint (`SourceFingerprint`, the notes' `SourceIdentity`) is one
SHA-256 over the repository state that a check's result depends on (§6.4 of
the teams notes):

1. Git runs without a shell as `git -c core.fsmonitor=false …` with
   `GIT_OPTIONAL_LOCKS=0`, a 10 s timeout and a 32 MiB output cap; its
   output must be UTF-8. The repository root comes from
   `git rev-parse --show-toplevel`; both listings run in that root.
2. Inputs are literal paths resolved against the cwd that must stay inside
   the repository, stored as sorted repo-relative POSIX scopes (`.` is the
   whole repository). Every explicit scope must match at least one file.
3. The inventory is `git ls-files --stage -z` (index entries
   `{file, index: "<mode> <object> <stage>"}`) plus
   `git ls-files --others --exclude-standard -z` (non-ignored untracked
   files); files in scope are the sorted union of both.
4. The hash covers, in order, `[{version, head, inputs, index}]` as compact
   JSON, then one JSON record per file: `[file, "missing"]` for a deleted
   tracked file, `[file, "symlink", <link text>]` for a symlink (never
   followed; it must point at a regular file in the captured set), and
   `[file, <mode & 0o777>, <sha256 of the bytes>]` for a regular file whose
   realpath is its own path. A file's `(dev, ino, mode, size, mtime_ns,
   ctime_ns)` stamp must not change while it is read.
5. After hashing, both listings run again and must be byte-identical, or
   the capture is refused ("Source input inventory changed during capture").

The notes say nothing of submodules: a gitlink (index mode `160000`) is
recorded as `[file, "submodule"]`; its recorded commit is covered by its
index entry, the submodule's own working tree is not (like ignored files,
it is outside coverage). Any other directory or special file is refused.

A fingerprint is an observation, not a snapshot: ignored files, anything
outside the repository, and edits reverted between two observations are not
seen. Hashing is blocking work; `capture_fingerprint` runs the sync core
`capture_fingerprint_sync` in a worker thread.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import stat
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from corral.orchestration.errors import InvalidRequestError
from corral.orchestration.store.jsjson import stringify

__all__ = [
    "FINGERPRINT_VERSION",
    "SourceCaptureError",
    "SourceFingerprint",
    "capture_fingerprint",
    "capture_fingerprint_sync",
    "same_tested_source",
]

FINGERPRINT_VERSION = 1
"""The `version` of every fingerprint this module writes."""
GIT_TIMEOUT_SECONDS = 10.0
"""How long one git command may run."""
GIT_OUTPUT_LIMIT_BYTES = 32 * 1024 * 1024
"""The largest output one git command may produce (32 MiB)."""
_GITLINK_MODE = "160000"
_HASH_CHUNK = 1024 * 1024


class SourceCaptureError(InvalidRequestError):
    """The source fingerprint could not be captured (not a repository, a bad input, a change mid-capture)."""


@dataclass(frozen=True, slots=True)
class SourceFingerprint:
    """One observation of a repository's tested source (the notes' `SourceIdentity`)."""

    version: int
    """Format version; always `FINGERPRINT_VERSION` for new captures."""
    cwd: str
    """Realpath of the directory the capture was made from."""
    repository_root: str
    """Realpath of the Git top level containing `cwd`."""
    head: str | None
    """The commit `HEAD` names, or `None` in a repository without commits."""
    fingerprint: str
    """SHA-256 (64 lowercase hex) over the index, the files in scope and their bytes and modes."""
    inputs: tuple[str, ...]
    """Repo-relative POSIX scopes, sorted; `(".",)` for the whole repository."""
    file_count: int
    """How many files (tracked and non-ignored untracked) were hashed."""

    def to_json(self) -> dict[str, Any]:
        """The JSON object: `version, cwd, repositoryRoot, head, fingerprint, inputs, fileCount`."""
        return {
            "version": self.version,
            "cwd": self.cwd,
            "repositoryRoot": self.repository_root,
            "head": self.head,
            "fingerprint": self.fingerprint,
            "inputs": list(self.inputs),
            "fileCount": self.file_count,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SourceFingerprint:
        """Parse the object `to_json` wrote.

        Raises:
            ValueError: A field is missing or has the wrong type.
        """
        try:
            version = data["version"]
            cwd = data["cwd"]
            root = data["repositoryRoot"]
            head = data["head"]
            fingerprint = data["fingerprint"]
            inputs = data["inputs"]
            file_count = data["fileCount"]
        except (KeyError, TypeError) as exc:
            raise ValueError(f"source identity is missing {exc}") from None
        if not (
            type(version) is int
            and isinstance(cwd, str)
            and isinstance(root, str)
            and (head is None or isinstance(head, str))
            and isinstance(fingerprint, str)
            and len(fingerprint) == 64
            and isinstance(inputs, list)
            and all(isinstance(item, str) for item in inputs)
            and type(file_count) is int
        ):
            raise ValueError("source identity has a field of the wrong type")
        return cls(version, cwd, root, head, fingerprint, tuple(inputs), file_count)


def same_tested_source(a: SourceFingerprint, b: SourceFingerprint) -> bool:
    """Whether two observations saw the same source: same version, cwd, repository root and fingerprint."""
    return (
        a.version == b.version
        and a.cwd == b.cwd
        and a.repository_root == b.repository_root
        and a.fingerprint == b.fingerprint
    )


def _git_env() -> dict[str, str]:
    env = dict(os.environ)
    env["GIT_OPTIONAL_LOCKS"] = "0"
    return env


def _git(args: Sequence[str], cwd: str, *, allowed_codes: tuple[int, ...] = (0,)) -> tuple[int, bytes]:
    """Run one git command (no shell); returns its exit code and raw stdout."""
    argv = ["git", "-c", "core.fsmonitor=false", *args]
    try:
        done = subprocess.run(
            argv,
            cwd=cwd,
            env=_git_env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=GIT_TIMEOUT_SECONDS,
            check=False,
        )
    except FileNotFoundError:
        raise SourceCaptureError(
            "git is not installed; install git to capture source fingerprints."
        ) from None
    except subprocess.TimeoutExpired:
        raise SourceCaptureError(
            f"git {args[0]} took longer than {GIT_TIMEOUT_SECONDS:g} s in {cwd}; retry when the repository is idle."
        ) from None
    if len(done.stdout) > GIT_OUTPUT_LIMIT_BYTES:
        raise SourceCaptureError(
            f"git {args[0]} output exceeds {GIT_OUTPUT_LIMIT_BYTES} bytes in {cwd}; narrow the check inputs."
        )
    if done.returncode not in allowed_codes:
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
        reason = detail[0] if detail else f"exit code {done.returncode}"
        raise SourceCaptureError(f"git {args[0]} failed in {cwd}: {reason}")
    return done.returncode, done.stdout


def _decode(data: bytes, what: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise SourceCaptureError(
            f"git {what} output is not valid UTF-8; rename the offending paths."
        ) from None


def _repository_root(cwd: str) -> str:
    try:
        _, out = _git(["rev-parse", "--show-toplevel"], cwd)
    except SourceCaptureError:
        raise SourceCaptureError(
            f"{cwd} is not inside a Git repository; source fingerprints need one."
        ) from None
    top = _decode(out, "rev-parse").rstrip("\n")
    if not top:
        raise SourceCaptureError(f"{cwd} has no Git working tree; source fingerprints need one.")
    return os.path.realpath(top)


def _scopes(cwd: str, root: str, inputs: Sequence[str] | None) -> tuple[str, ...]:
    if inputs is None:
        return (".",)
    scopes: set[str] = set()
    for item in inputs:
        resolved = os.path.normpath(os.path.join(cwd, item))
        relative = os.path.relpath(resolved, root)
        if relative == ".." or relative.startswith("../") or os.path.isabs(relative):
            raise SourceCaptureError(f"Source input is outside the repository: {item}")
        scopes.add(Path(relative).as_posix())
    return tuple(sorted(scopes))


@dataclass(frozen=True, slots=True)
class _Inventory:
    index_raw: bytes
    untracked_raw: bytes

    def index_entries(self) -> list[tuple[str, str]]:
        entries: list[tuple[str, str]] = []
        for record in _decode(self.index_raw, "ls-files").split("\0"):
            if not record:
                continue
            meta, _, file = record.partition("\t")
            entries.append((file, meta))
        return entries

    def untracked(self) -> list[str]:
        return [path for path in _decode(self.untracked_raw, "ls-files").split("\0") if path]


def _inventory(root: str) -> _Inventory:
    _, index = _git(["ls-files", "--stage", "-z"], root)
    _, untracked = _git(["ls-files", "--others", "--exclude-standard", "-z"], root)
    return _Inventory(index, untracked)


def _in_scope(path: str, scopes: tuple[str, ...]) -> bool:
    return any(scope == "." or path == scope or path.startswith(scope + "/") for scope in scopes)


def _stamp(st: os.stat_result) -> tuple[int, int, int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _changed(file: str) -> SourceCaptureError:
    return SourceCaptureError(
        f"Source input changed during capture: {file}; retry when it is no longer being written."
    )


def _file_record(
    root: str,
    file: str,
    captured: frozenset[str],
    gitlinks: frozenset[str],
    on_file_hashed: Callable[[str], object] | None,
) -> str:
    full = os.path.join(root, file)
    try:
        before = os.lstat(full)
    except FileNotFoundError:
        return stringify([file, "missing"])
    if stat.S_ISLNK(before.st_mode):
        target = os.readlink(full)
        resolved = os.path.realpath(full)
        relative = os.path.relpath(resolved, root)
        if relative not in captured or not os.path.isfile(resolved):
            raise SourceCaptureError(
                f"Source symlink {file} must point to a regular source file in scope; fix or remove it."
            )
        if _stamp(os.lstat(full)) != _stamp(before):
            raise _changed(file)
        return stringify([file, "symlink", target])
    if stat.S_ISDIR(before.st_mode) and file in gitlinks:
        return stringify([file, "submodule"])
    if not stat.S_ISREG(before.st_mode):
        raise SourceCaptureError(
            f"Source input {file} is not a regular file or symlink; remove it or ignore it."
        )
    if os.path.realpath(full) != os.path.join(os.path.realpath(root), file):
        raise SourceCaptureError(
            f"Source input {file} lies under a symlinked directory; capture the real path."
        )
    digest = hashlib.sha256()
    try:
        fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise SourceCaptureError(f"Source input {file} cannot be read: {exc.strerror or exc}") from None
    try:
        if _stamp(os.fstat(fd)) != _stamp(before):
            raise _changed(file)
        while chunk := os.read(fd, _HASH_CHUNK):
            digest.update(chunk)
    finally:
        os.close(fd)
    if on_file_hashed is not None:
        on_file_hashed(file)
    try:
        after = os.lstat(full)
    except FileNotFoundError:
        raise _changed(file) from None
    if _stamp(after) != _stamp(before):
        raise _changed(file)
    return stringify([file, before.st_mode & 0o777, digest.hexdigest()])


def capture_fingerprint_sync(
    cwd: str | os.PathLike[str],
    inputs: Sequence[str] | None = None,
    *,
    on_file_hashed: Callable[[str], object] | None = None,
    before_recheck: Callable[[], object] | None = None,
) -> SourceFingerprint:
    """Capture the fingerprint of the repository containing `cwd` (blocking).

    Args:
        cwd: The agent's working directory; must be inside a Git working tree.
        inputs: Literal paths relative to `cwd`, each inside the repository; `None` covers the
            whole repository.
        on_file_hashed: Called with each regular file's path after its bytes were read and
            before its stamp is re-checked (a probe for tests and diagnostics).
        before_recheck: Called after hashing, before the inventory is listed again (a probe
            for tests and diagnostics).

    Returns:
        The observation.

    Raises:
        SourceCaptureError: `cwd` is not in a repository, an input is outside it or matches
            nothing, a path is of an unsupported kind, git failed, or the source changed
            during the capture.
    """
    try:
        real_cwd = os.path.realpath(cwd)
    except OSError as exc:
        raise SourceCaptureError(f"Cannot resolve {cwd}: {exc.strerror or exc}") from None
    if not os.path.isdir(real_cwd):
        raise SourceCaptureError(f"{cwd} is not a directory; source fingerprints need an existing cwd.")
    root = _repository_root(real_cwd)
    scopes = _scopes(real_cwd, root, inputs)
    inventory = _inventory(root)
    index = [(file, meta) for file, meta in inventory.index_entries() if _in_scope(file, scopes)]
    untracked = [path for path in inventory.untracked() if _in_scope(path, scopes)]
    files = sorted({file for file, _ in index} | set(untracked))
    if scopes != (".",):
        for scope in scopes:
            if not any(path == scope or path.startswith(scope + "/") for path in files):
                raise SourceCaptureError(f"No tracked or nonignored source inputs captured for scope {scope}")
    code, head_out = _git(["rev-parse", "--verify", "--quiet", "HEAD"], root, allowed_codes=(0, 1))
    head = (_decode(head_out, "rev-parse").strip() or None) if code == 0 else None
    gitlinks = frozenset(file for file, meta in index if meta.split(" ", 1)[0] == _GITLINK_MODE)
    digest = hashlib.sha256()
    header = {
        "version": FINGERPRINT_VERSION,
        "head": head,
        "inputs": list(scopes),
        "index": [{"file": file, "index": meta} for file, meta in index],
    }
    digest.update(stringify(header).encode("utf-8"))
    captured = frozenset(files)
    for file in files:
        digest.update(_file_record(root, file, captured, gitlinks, on_file_hashed).encode("utf-8"))
    if before_recheck is not None:
        before_recheck()
    if _inventory(root) != inventory:
        raise SourceCaptureError(
            "Source input inventory changed during capture; retry when the repository is idle."
        )
    return SourceFingerprint(
        version=FINGERPRINT_VERSION,
        cwd=real_cwd,
        repository_root=root,
        head=head,
        fingerprint=digest.hexdigest(),
        inputs=scopes,
        file_count=len(files),
    )


async def capture_fingerprint(
    cwd: str | os.PathLike[str], inputs: Sequence[str] | None = None
) -> SourceFingerprint:
    """Capture the fingerprint of the repository containing `cwd`, off the event loop.

    See `capture_fingerprint_sync` for the arguments and errors.
    """
    return await asyncio.to_thread(capture_fingerprint_sync, cwd, inputs)
