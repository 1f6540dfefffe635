"""The teams core: agents a lead spawns, messages, status, reports, checks, repair, groups, checkpoints.

This package re-exports nothing, so importing one piece of it (a repository the composition
root opens, the tiers table the app shows) loads only that piece; the core itself (`Teams` and
everything it drives) is imported where it is built, by the composition root on first use.
Import a name from the module that defines it:

* `_teams` — `Teams` (spawn, swarm, admission, launch); `_control` — messages, stop/interrupt,
  quarantine, status; `_status` — the one phase projection (`member_status`, `TeamSnapshot`);
  `_member` — `TeamChild`; `_extension` — `TeamsExtension`, the core on the host's port.
* `_tiers` — intent tiers (`TIERS`, `resolve_tier`, `resolve_tier_model`); `_capacity` —
  `CapacityController` (`maxConcurrent`, the overflow queue, quarantine); `_errors`;
  `_session_context`; `_costs` — `team_costs`; `commands` and `results` — the typed commands
  and results the surfaces adapt; `_repositories` — `TeamsRepositories`.
* One folder per feature, each with its records, its repository and its logic: `roster/`,
  `reports/`, `checks/`, `repair/`, `groups/`, `checkpoints/`.
"""
