"""Isolated writers through the real `corral` command: `isolation = "worktree"`, parallel writers on one
file, `corral merge` (merged / conflict / bad input / discard), a SIGKILL in the middle of a merge, and
`corral agents reap` refusing unmerged work."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.orchestration.teams._git_helpers import GIT_ENV, git, make_repo

from .conftest import Env, RunCorral

LEAD = """
steps:
  - text: "Two writers, one file."
    tool_calls:
      - {name: agent, args: {action: delegate, definition: implementer, label: alpha, task: "Set value to alpha."}}
      - {name: agent, args: {action: delegate, definition: implementer, label: beta, task: "Set value to beta."}}
  - text: "Waiting for both."
  - text: "Done."
on_exhausted: repeat_last
agents:
  alpha:
    - tool_calls:
        - {name: read, args: {path: README.md}}
        - {name: write, args: {path: app.py, content: "value = 'alpha'\\n"}}
    - text: "Alpha set the value."
      expect: {context_contains: ["the user's uncommitted draft"]}
      otherwise: {text: "alpha did not see the draft"}
  beta:
    - tool_calls:
        - {name: write, args: {path: app.py, content: "value = 'beta'\\n"}}
    - text: "Beta set the value."
"""


@pytest.fixture
def repo(cli_env: Env) -> Path:
    make_repo(cli_env.project, {"app.py": "value = 'original'\n", "README.md": "# App\n"})
    (cli_env.project / "README.md").write_text("# App\nthe user's uncommitted draft\n")
    cli_env.vars.update(GIT_ENV)
    cli_env.settings('isolation = "worktree"\n')
    return cli_env.project


def _results(env: Env) -> dict[str, dict]:
    [lead] = [p for p in env.sessions() if '"managed"' not in p.read_text().splitlines()[0]]
    entries = [json.loads(line) for line in lead.read_text().splitlines()[1:]]
    return {
        e["details"]["agent"]: e
        for e in entries
        if e["type"] == "custom_message" and e["customType"] == "corral-agent-result"
    }


def _run_writers(corral: RunCorral, env: Env) -> dict[str, dict]:
    env.script("lead", LEAD)
    done = corral("run", "--model", "scripted/lead", "-p", "go")
    assert done.returncode == 0, done.stderr
    results = _results(env)
    assert {name: "branch" in r["details"] for name, r in results.items()} == {"alpha": True, "beta": True}, (
        done.stdout + done.stderr + json.dumps(results, indent=1)
    )
    return results


def test_parallel_writers_work_in_worktrees_and_merge_back_one_clean_one_conflicting(
    corral: RunCorral, cli_env: Env, repo: Path
) -> None:
    head = git(repo, "rev-parse", "HEAD").strip()
    results = _run_writers(corral, cli_env)

    # The main tree is untouched until a merge; the user's draft is still there, uncommitted.
    assert (repo / "app.py").read_text() == "value = 'original'\n"
    assert (repo / "README.md").read_text().endswith("the user's uncommitted draft\n")
    assert git(repo, "rev-parse", "HEAD").strip() == head
    for name in ("alpha", "beta"):
        details = results[name]["details"]
        assert details["branch"].startswith(f"corral/{name}-") and details["merge"] == "pending"
        assert details["diffStat"]["files"] == ["app.py"]
        assert details["base"] != head  # the base is the snapshot holding the user's draft
        assert details["branch"] in results[name]["content"]
        assert Path(details["cwd"]).is_dir() and repo not in Path(details["cwd"]).parents
    assert "Alpha set the value." in results["alpha"]["content"]  # alpha saw the uncommitted draft
    log = git(repo, "log", "-1", "--format=%an|%s", results["alpha"]["details"]["branch"])
    assert log.startswith("corral|alpha: Alpha set the value.")

    merged = corral("merge", "alpha")
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert "merged corral/alpha-" in merged.stdout
    assert (repo / "app.py").read_text() == "value = 'alpha'\n"
    assert (repo / "README.md").read_text().endswith("the user's uncommitted draft\n")

    conflict = corral("merge", "beta")
    assert conflict.returncode == 1
    assert "conflicts" in conflict.stdout and "  app.py" in conflict.stdout
    assert (repo / "app.py").read_text() == "value = 'alpha'\n"
    beta_branch = results["beta"]["details"]["branch"]
    assert git(repo, "branch", "--list", beta_branch).strip().endswith(beta_branch)

    missing = corral("merge", "gamma")
    assert missing.returncode == 2 and missing.stdout == ""
    assert len(missing.stderr.strip().splitlines()) == 1 and "gamma" in missing.stderr

    dropped = corral("merge", "--discard", "beta")
    assert dropped.returncode == 0 and "discarded" in dropped.stdout
    assert git(repo, "branch", "--list", "corral/*") == ""
    assert git(repo, "status", "--porcelain").split() == ["M", "README.md"]
    # Merging a discarded branch: nothing left to merge, exit 0 as documented.
    after = corral("merge", "beta")
    assert (after.returncode, after.stderr) == (0, ""), after.stderr
    assert after.stdout == f"{beta_branch} was discarded; there is nothing to merge.\n"


IDLE = """
steps:
  - tool_calls:
      - {name: agent, args: {action: delegate, definition: implementer, label: idle, task: "Look, change nothing."}}
  - text: "Waiting."
  - text: "Done."
on_exhausted: repeat_last
agents:
  idle:
    - tool_calls:
        - {name: read, args: {path: README.md}}
    - text: "Nothing needed changing."
"""


def test_a_writer_that_changed_nothing_has_no_merge_pending(
    corral: RunCorral, cli_env: Env, repo: Path
) -> None:
    cli_env.script("lead", IDLE)
    done = corral("run", "--model", "scripted/lead", "-p", "go")
    assert done.returncode == 0, done.stderr
    result = _results(cli_env)["idle"]
    branch = result["details"]["branch"]
    assert result["details"]["merge"] == "nothing" and result["details"]["diffStat"]["files"] == []
    assert "merge pending" not in result["content"]
    assert f"No changes on branch {branch}: nothing to merge" in result["content"]

    merged = corral("merge", "idle")
    assert merged.returncode == 0, merged.stderr
    assert "nothing to merge" in merged.stdout
    assert git(repo, "branch", "--list", "corral/*") == ""


def test_outside_a_git_repository_an_isolated_delegation_fails_clearly(
    corral: RunCorral, cli_env: Env
) -> None:
    cli_env.settings('isolation = "worktree"\n')
    cli_env.script(
        "lone",
        """
steps:
  - tool_calls:
      - {name: agent, args: {action: delegate, definition: implementer, task: "Change something."}}
  - text: "{{ last_tool_output }}"
""",
    )
    done = corral("run", "--model", "scripted/lone", "-p", "go")
    assert done.returncode == 0, done.stderr
    assert "not inside a git repository" in done.stdout and "isolation" in done.stdout


def test_sigkill_in_the_middle_of_a_merge_then_the_next_run_says_the_merge_completed(
    corral: RunCorral, cli_env: Env, repo: Path
) -> None:
    _run_writers(corral, cli_env)
    killed = corral("merge", "alpha", env={"CORRAL_FAULTS": "worktree_merge_tree"})
    assert killed.returncode == -9
    again = corral("merge", "alpha")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "interrupted after it changed your files; it is now complete" in again.stdout
    assert (repo / "app.py").read_text() == "value = 'alpha'\n"
    assert (repo / "README.md").read_text().endswith("the user's uncommitted draft\n")
    assert git(repo, "status", "--porcelain").split() == ["M", "README.md"]


def test_sigkill_before_the_tree_changed_leaves_the_old_tree_and_says_so(
    corral: RunCorral, cli_env: Env, repo: Path
) -> None:
    _run_writers(corral, cli_env)
    killed = corral("merge", "alpha", env={"CORRAL_FAULTS": "worktree_merge_journaled"})
    assert killed.returncode == -9
    doctor = corral("doctor", "--json")
    [check] = [c for c in json.loads(doctor.stdout)["checks"] if c["name"] == "worktrees"]
    assert check["status"] == "warn" and "interrupted merge" in check["message"]
    assert (repo / "app.py").read_text() == "value = 'original'\n"
    again = corral("merge", "alpha")
    assert "before it changed anything; your tree is as it was" in again.stdout
    assert again.returncode == 0 and (repo / "app.py").read_text() == "value = 'alpha'\n"


def test_reap_refuses_unmerged_work_without_force(corral: RunCorral, cli_env: Env, repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "corral/stray-0000abcd")
    (repo / "stray.txt").write_text("work nobody merged\n")
    git(repo, "add", "stray.txt")
    git(repo, "commit", "-q", "-m", "stray work")
    git(repo, "checkout", "-q", "-")
    git(repo, "branch", "corral/merged-0000abcd")

    dry = corral("agents", "reap", "--dry-run")
    assert "orphan worktree corral/stray-0000abcd (unmerged work)" in dry.stdout
    kept = corral("agents", "reap")
    assert kept.returncode == 1
    assert (
        "kept corral/stray-0000abcd" in kept.stdout
        and "reaped worktree corral/merged-0000abcd" in kept.stdout
    )
    assert git(repo, "branch", "--list", "corral/*").split() == ["corral/stray-0000abcd"]
    forced = corral("agents", "reap", "--force")
    assert forced.returncode == 0, forced.stdout
    assert git(repo, "branch", "--list", "corral/*") == ""
    assert subprocess.run(
        ["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True
    ).stdout.split() == [
        "M",
        "README.md",
    ]


TEAM = """
steps:
  - tool_calls:
      - name: spawn_agent
        args:
          name: fixer
          model_slot: write-patch
          prompt: "Set the value to fixed."
          checks: [{name: value, command: "grep -q fixed app.py", timeoutSeconds: 30}]
  - text: "Waiting."
  - text: "Done."
on_exhausted: repeat_last
agents:
  fixer:
    - tool_calls:
        - {name: write, args: {path: app.py, content: "value = 'fixed'\\n"}}
    - tool_calls:
        - {name: report_and_exit, args: {content: "Fixed.", summary: "value fixed", outcome: succeeded}}
"""


def test_a_teams_write_tier_checks_and_reports_from_its_worktree(
    corral: RunCorral, cli_env: Env, repo: Path
) -> None:
    cli_env.settings('isolation = "worktree"\nsurfaces = ["teams"]\n')
    cli_env.script("team", TEAM)
    done = corral("run", "--model", "scripted/team", "-p", "go")
    assert done.returncode == 0, done.stderr
    [lead] = [p for p in cli_env.sessions() if '"managed"' not in p.read_text().splitlines()[0]]
    entries = [json.loads(line) for line in lead.read_text().splitlines()[1:]]
    [report] = [e for e in entries if e.get("customType") == "corral-team-report"]
    details = report["details"]
    # The check ran in the worktree: `fixed` is only there, the lead's tree is untouched.
    assert details["verification"]["state"] == "passed", details["verification"]
    assert details["branch"].startswith("corral/fixer-") and details["merge"] == "pending"
    assert details["diffStat"]["files"] == ["app.py"]
    assert (repo / "app.py").read_text() == "value = 'original'\n"
    assert details["branch"] in report["content"]
    merged = corral("merge", "fixer")
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert (repo / "app.py").read_text() == "value = 'fixed'\n"
