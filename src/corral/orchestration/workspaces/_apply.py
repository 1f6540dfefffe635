"""Apply a write agent's patch to the lead's real workspace: all or nothing, nothing overwritten.

Order of the checks, each of which leaves the workspace untouched when it refuses:

1. **Claims** — a path held by another agent (teams file claims; a claim on a directory covers
   everything under it) is refused with its holder named. Claims are advisory in corral, as in the
   teams contract: a path nobody claims, or the agent itself claims, may change.
2. **Conflicts** — `git apply --check` against the working tree. A text hunk applies only where its
   context still matches (a change the user made elsewhere in the same file is kept); a binary file,
   a deleted file or a file created by the patch applies only when the user left it exactly as it was
   in the snapshot. On failure each path is checked alone so the report names every conflicting path
   with git's reason.
3. **Apply** — `git apply` (which re-checks everything before it writes anything). Only the working
   tree changes; the user's index and HEAD are left alone, as when an agent edits in place.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from corral.orchestration.teams.roster.records import FileClaimRecord
from corral.orchestration.workspaces.records import PatchOutcome, PathProblem, WorkspacePatch
from corral.orchestration.worktrees._git import git_bytes

__all__ = ["apply_patch", "is_applied"]

_APPLY = ("apply", "--binary", "--whitespace=nowarn", "-p1")


def _held_by_others(
    files: Sequence[str], claims: Sequence[FileClaimRecord], run_id: str | None
) -> tuple[PathProblem, ...]:
    problems = []
    for path in files:
        for claim in claims:
            if claim.run_id == run_id:
                continue
            if path == claim.path or path.startswith(claim.path + "/"):
                problems.append(PathProblem(path, f"claimed by {claim.agent}"))
                break
    return tuple(problems)


def _wildmatch_literal(path: str) -> str:
    """`path` as a git wildmatch pattern that matches itself only."""
    return "".join("\\" + char if char in "\\*?[" else char for char in path)


def _reason(stderr: str) -> str:
    lines = [
        line.removeprefix("error: ").strip() for line in stderr.splitlines() if line.startswith("error:")
    ]
    return "; ".join(lines) or stderr or "git apply refused it"


def _conflicts(top: Path, patch: WorkspacePatch) -> tuple[PathProblem, ...]:
    problems = []
    for path in patch.files:
        alone = git_bytes(
            top,
            *_APPLY,
            "--check",
            f"--include={_wildmatch_literal(path)}",
            "-",
            stdin=patch.diff,
            check=False,
        )
        if alone.returncode != 0:
            problems.append(PathProblem(path, _reason(alone.stderr)))
    return tuple(problems)


def _refused(patch: WorkspacePatch, problems: tuple[PathProblem, ...], kind: str) -> PatchOutcome:
    listed = "; ".join(f"{p.path} ({p.why})" for p in problems)
    if kind == "claimed":
        message = (
            f"the agent's changes were not applied: {listed}; nothing in the workspace changed. "
            "Ask the holder to release the path, or apply the agent's changes yourself"
        )
        return PatchOutcome("claimed", patch.files, problems, message)
    message = (
        f"the agent's changes conflict with the workspace and were not applied: {listed}; "
        "nothing in the workspace changed. Resolve the paths (or commit or stash your changes) and "
        "ask the agent again, or apply its patch by hand"
    )
    return PatchOutcome("conflict", patch.files, problems, message)


def is_applied(top: Path, patch: WorkspacePatch) -> bool:
    """Whether the workspace already holds `patch` (its reverse applies): landing it again is a no-op."""
    if patch.empty:
        return True
    return git_bytes(top, *_APPLY, "--check", "--reverse", "-", stdin=patch.diff, check=False).returncode == 0


def apply_patch(
    top: Path,
    patch: WorkspacePatch,
    *,
    claims: Sequence[FileClaimRecord] = (),
    run_id: str | None = None,
) -> PatchOutcome:
    """Apply `patch` to the working tree at `top` (the lead's repository top), or refuse it whole.

    Args:
        top: The top of the lead's working tree (the snapshot's `top`).
        patch: The write agent's changes (`collect_patch` on the node).
        claims: The team's file claims; paths held by a run other than `run_id` are refused.
        run_id: The agent's run (its own claims never block it).

    Blocking (git subprocesses): call it off the event loop, one patch per workspace at a time.
    """
    if patch.empty:
        return PatchOutcome("empty", (), (), "the agent changed no files")
    held = _held_by_others(patch.files, claims, run_id)
    if held:
        return _refused(patch, held, "claimed")
    checked = git_bytes(top, *_APPLY, "--check", "-", stdin=patch.diff, check=False)
    if checked.returncode == 0:
        done = git_bytes(top, *_APPLY, "-", stdin=patch.diff, check=False)
        if done.returncode == 0:
            count = len(patch.files)
            return PatchOutcome(
                "applied",
                patch.files,
                (),
                f"the agent's changes to {count} file{'s' if count != 1 else ''} were applied to the workspace",
            )
    # Refused (or the workspace changed between the check and the apply: git apply writes nothing
    # unless every path applies). Name each conflicting path.
    problems = _conflicts(top, patch) or (PathProblem(", ".join(patch.files), _reason(checked.stderr)),)
    return _refused(patch, problems, "conflict")
