"""Remote agents' workspaces: the shared-filesystem check, a snapshot's size and cost, and a patch's
way back, on a 10,000-file repository.

A fresh git repository of `--files` files (default 10,000 in 100 directories, ~100 bytes each, plus
one 1 MiB binary; one commit), with uncommitted changes (10 modified and 10 untracked files) so the
snapshot carries them. Per round: `identify` on the lead, `check_shared` as a node would run it,
`take_snapshot` (the pack's size is reported), `unpack` into a private directory, an agent's edit of
20 files (10 modified, 10 new), `collect_patch`, `apply_patch` on the lead (the patch's size is
reported), `discard`. No Ray: this is the git work a Ray node and the lead add to a remote agent;
the snapshot's transfer is Ray's object store (the pack's size is what crosses the network). Prints
one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import environment, summary_ms

from corral.orchestration.workspaces._apply import apply_patch
from corral.orchestration.workspaces._snapshot import (
    check_shared,
    collect_patch,
    discard,
    identify,
    take_snapshot,
    unpack,
)

GIT_ENV = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "Bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "Bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
}


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "init.defaultBranch=main", *args], cwd=repo, capture_output=True, check=True)


def _make_repo(root: Path, files: int) -> Path:
    repo = root / "lead"
    for n in range(files):
        path = repo / f"d{n % 100:02d}" / f"f{n:05d}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"file {n}\n" + "x" * 90 + "\n")
    (repo / "assets").mkdir()
    (repo / "assets" / "blob.bin").write_bytes(os.urandom(1 << 20))
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "initial")
    for n in range(10):
        (repo / "d00" / f"f{n * 100:05d}.txt").write_text(f"modified {n}\n")
        (repo / "untracked" / f"u{n}.txt").parent.mkdir(exist_ok=True)
        (repo / "untracked" / f"u{n}.txt").write_text(f"untracked {n}\n")
    return repo


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    os.environ.update(GIT_ENV)
    root = Path(tempfile.mkdtemp(prefix="corral-bench-workspace-"))
    steps = ("identify", "check_shared", "take_snapshot", "unpack", "collect_patch", "apply_patch", "discard")
    samples: dict[str, list[float]] = {step: [] for step in steps}
    sizes: dict[str, int] = {}
    try:
        repo = _make_repo(root, args.files)
        for round_ in range(args.rounds):

            def timed(step: str, call, *a, **kw):  # type: ignore[no-untyped-def]
                start = time.perf_counter()
                value = call(*a, **kw)
                samples[step].append(time.perf_counter() - start)
                return value

            identity = timed("identify", identify, repo)
            assert timed("check_shared", check_shared, identity).shared
            snapshot = timed("take_snapshot", take_snapshot, repo)
            unpacked = timed("unpack", unpack, snapshot, root / "node")
            for n in range(10):
                (unpacked.root / "d01" / f"f{n * 100 + 1:05d}.txt").write_text(f"agent {round_} {n}\n")
                (unpacked.root / "agent" / f"r{round_}-{n}.txt").parent.mkdir(exist_ok=True)
                (unpacked.root / "agent" / f"r{round_}-{n}.txt").write_text(f"new {n}\n")
            patch = timed("collect_patch", collect_patch, unpacked)
            outcome = timed("apply_patch", apply_patch, repo, patch)
            assert outcome.kind == "applied", outcome.message
            timed("discard", discard, unpacked)
            sizes = {"snapshot_pack_bytes": len(snapshot.pack), "patch_bytes": len(patch.diff)}
        result = {
            "benchmark": "workspace",
            "files": args.files,
            "rounds": args.rounds,
            **sizes,
            **{step: summary_ms(values) for step, values in samples.items()},
            "env": environment("benchmarks/bench_workspace.py"),
        }
        print(json.dumps(result, indent=2))
        return 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
