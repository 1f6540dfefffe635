"""Workspaces of agents that run on another machine (the Ray runtime): shared, or a shipped snapshot.

An agent works in its lead's working directory. On another node that directory may or may not be
the same one:

* **Shared filesystem** — the node sees the lead's cwd at the same path, in the same git repository
  at the same HEAD with the same uncommitted changes (`check_shared`, which runs *on the node*
  against the `WorkspaceIdentity` the lead took with `identify`). The agent works in place, as on
  the lead's machine.
* **Snapshot** — otherwise the lead ships a snapshot (`take_snapshot`): the tracked files at HEAD
  plus every uncommitted change (modified, staged, deleted, untracked and not ignored), as a git
  pack of one tree, so it is binary-safe and verified by git itself. The node unpacks it into a
  private directory (`unpack`) that is a git repository of its own with the snapshot as its one
  commit. A read agent works there and its directory is discarded. A write agent's changes come back
  as a binary git patch against the snapshot (`collect_patch`), which the lead's host applies to the
  real workspace (`apply_patch`): all or nothing, never over a path another agent has claimed, and
  never over a change the user made since the snapshot — conflicts are reported path by path and
  the workspace is left exactly as it was.

`_remote` strings these together for a runtime: `plan_for` and `with_snapshot` on the lead,
`open_workspace` and `close_workspace` in the node's worker, `PatchLanding` back on the lead.

Pure git over argv subprocesses (the worktrees feature's `git` helpers); no Ray. See
docs/runtimes.md ("Workspaces").

The package re-exports nothing: import a name from the module that defines it (`_snapshot`,
`_apply`, `_remote`, `records`, `_extension`). `WorkspacesExtension` is on every host, so loading it
must not load the snapshot and patch code; that loads with the first Ray agent that uses it.
"""
