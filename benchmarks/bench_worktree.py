"""Per-agent git worktrees: creation and teardown on a 10,000-file repository, and 10 writers.

1. **create / teardown**: a fresh git repository of `--files` files (default
   10,000, 100 directories, ~100 bytes each, one commit). Each round times
   `Worktrees.isolate` (snapshot of the lead's tree, `git worktree add` of a new
   branch, the store row) and then the teardown (`Worktrees.finish` committing
   nothing, `Worktrees.discard`: `git worktree remove`, branch deleted, outcome
   recorded). Rounds alternate a clean tree and a dirty one (10 modified and 10
   untracked files, so the snapshot commit is part of the figure). The baseline
   is a plain copy of the same files (`shutil.copytree` without `.git`): the
   file system's own cost of writing that many files, which no worktree can beat.
2. **10 writers**: `--writers` writers (default 10) each write `--edits` new
   files (default 20) and modify one shared file region of their own. *shared*:
   all write straight into the repository, one thread each. *isolated*: each
   gets its worktree (in parallel threads), writes there, its work is committed
   (`finish`), then the branches are merged one after another into the lead's
   tree. Wall time for each, and the disk the isolated worktrees used at their
   peak (allocated blocks under the worktree root; git objects they add to the
   repository are counted separately).

No model is involved: this measures the git and store work corral adds to an
isolated writer. Prints one JSON object.
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
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import environment, summary_ms

from corral.orchestration import Repositories
from corral.orchestration.worktrees._tree import disk_usage
from corral.orchestration.worktrees._worktrees import Worktrees

GIT_ENV = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "Bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "Bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
}


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "init.defaultBranch=main", *args], cwd=repo, capture_output=True, text=True, check=True
    ).stdout


def make_repo(path: Path, files: int) -> Path:
    path.mkdir(parents=True)
    _git(path, "init", "-q")
    for i in range(files):
        folder = path / f"d{i % 100:03d}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{i:05d}.txt").write_text(f"file {i}\n" + "x" * 90 + "\n")
    (path / "shared.txt").write_text("".join(f"line {i}\n" for i in range(100)))
    _git(path, "add", "-A")
    _git(path, "commit", "-q", "-m", "initial")
    return path


def bench_create_teardown(root: Path, *, files: int, rounds: int) -> dict[str, object]:
    repo = make_repo(root / "big", files)
    create: list[float] = []
    teardown: list[float] = []
    with Repositories.open(root / "home" / "corral.db") as store:
        trees = Worktrees(store.worktrees, home=root / "home")
        for n in range(rounds):
            dirty = n % 2 == 1
            if dirty:
                for i in range(10):
                    (repo / "d000" / f"f{i * 100:05d}.txt").write_text(f"changed {n}\n")
                    (repo / f"new{i}.txt").write_text("untracked\n")
            run_id = str(uuid.uuid4())
            start = time.perf_counter()
            isolation = trees.isolate(repo, name="bench", run_id=run_id, owner_session_id=None)
            create.append(time.perf_counter() - start)
            assert (isolation.cwd / "d099" / "f09999.txt").is_file() or files < 10000
            start = time.perf_counter()
            trees.finish(run_id, "nothing")
            trees.discard(isolation.record.branch)
            teardown.append(time.perf_counter() - start)
            if dirty:
                _git(repo, "checkout", "-q", "--", ".")
                _git(repo, "clean", "-qfd")
    copies: list[float] = []
    for n in range(min(rounds, 3)):
        start = time.perf_counter()
        shutil.copytree(repo, root / f"copy{n}", ignore=shutil.ignore_patterns(".git"))
        copies.append(time.perf_counter() - start)
        shutil.rmtree(root / f"copy{n}")
    return {
        "files": files,
        "rounds": rounds,
        "create": summary_ms(create),
        "teardown": summary_ms(teardown),
        "baseline_plain_copy": summary_ms(copies),
    }


def _write(tree: Path, writer: int, edits: int) -> None:
    out = tree / f"w{writer:02d}"
    out.mkdir(exist_ok=True)
    for i in range(edits):
        (out / f"out{i:03d}.txt").write_text(f"writer {writer} file {i}\n")


def bench_writers(root: Path, *, files: int, writers: int, edits: int) -> dict[str, object]:
    shared_repo = make_repo(root / "shared", files)
    start = time.perf_counter()
    with ThreadPoolExecutor(writers) as pool:
        list(pool.map(lambda w: _write(shared_repo, w, edits), range(writers)))
    shared_wall = time.perf_counter() - start

    repo = make_repo(root / "isolated", files)
    objects_before = disk_usage(repo / ".git")
    with Repositories.open(root / "home2" / "corral.db") as store:
        trees = Worktrees(store.worktrees, home=root / "home2")
        runs = [str(uuid.uuid4()) for _ in range(writers)]
        start = time.perf_counter()

        def one(w: int) -> None:
            isolation = trees.isolate(repo, name=f"writer{w}", run_id=runs[w], owner_session_id=None)
            _write(isolation.cwd, w, edits)
            trees.finish(runs[w], f"writer {w}")

        with ThreadPoolExecutor(writers) as pool:
            list(pool.map(one, range(writers)))
        isolated_ready = time.perf_counter() - start
        peak_disk = disk_usage(trees.root_for(repo.resolve()))
        merged = [trees.merge(f"writer{w}").outcome for w in range(writers)]
        isolated_wall = time.perf_counter() - start
    written = sum(1 for _ in repo.glob("w*/out*.txt"))
    return {
        "writers": writers,
        "edits_each": edits,
        "shared_wall_ms": round(shared_wall * 1000, 3),
        "isolated_ready_ms": round(isolated_ready * 1000, 3),
        "isolated_wall_ms": round(isolated_wall * 1000, 3),
        "isolated_peak_worktree_bytes": peak_disk,
        "repo_bytes": disk_usage(repo) - disk_usage(repo / ".git"),
        "git_dir_growth_bytes": disk_usage(repo / ".git") - objects_before,
        "merged": merged.count("merged"),
        "files_landed": written,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000, help="files in the repository (default 10000)")
    parser.add_argument("--rounds", type=int, default=6, help="create/teardown rounds (default 6)")
    parser.add_argument("--writers", type=int, default=10, help="parallel writers (default 10)")
    parser.add_argument("--edits", type=int, default=20, help="files each writer writes (default 20)")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="corral-bench-worktree-"))
    saved = {key: os.environ.get(key) for key in GIT_ENV}
    os.environ.update(GIT_ENV)
    try:
        result = {
            **environment("bench_worktree.py"),
            "git": _git(root, "--version").strip(),
            "create_teardown": bench_create_teardown(root, files=args.files, rounds=args.rounds),
            "writers": bench_writers(root, files=args.files, writers=args.writers, edits=args.edits),
        }
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        shutil.rmtree(root, ignore_errors=True)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
