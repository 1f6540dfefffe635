"""Per-agent git worktrees and a safe merge back (`isolation = "worktree"`).

An isolated write agent runs in its own worktree on branch
`corral/<label or name>-<short run id>`, made from the lead's HEAD plus the
lead's uncommitted changes. When it ends its work is committed on the branch;
`Worktrees.merge` applies the branch to the lead's working tree (fast-forward,
three-way merge, or a squash for a branch that started from uncommitted
changes) without ever overwriting uncommitted changes, and every outcome is
recorded in the store. See docs/teams.md ("Isolated writers").

The package re-exports nothing (the store imports it for its rows, and a lead that
never isolates an agent does not load the git layer): import a name from the
module that defines it — `_worktrees` (`Worktrees`, `MergeOutcome`, `branch_name`),
`_git` (`GitError`, `NotAGitRepositoryError`), `_tree` (`DiffStat`), `records`
(the stored rows), `_extension` (`IsolationStage`, the host extension).
"""
