"""The tmux runtime: an agent runs as a `corral worker` process in a pane of a private tmux server.

This folder holds the tmux runtime's own code above the core:

* `worker.py`: the worker process itself (`corral worker`, or `python -m corral._tmux.worker` as the
  pane runs it): it opens the shared store, builds the agent from the launch file, records its
  readiness and runs the generation; requests arrive through the store.
* `orphans.py`: panes no live generation accounts for (`find_orphans`, `reap_orphans`), which
  `corral doctor` reports and `corral agents reap` removes.

Two parts sit lower because the layers below use them, so they cannot live here without an
upward import:

* the pane API, `TmuxRuntime` (`corral/runtime/_tmux.py`): `Runtimes` makes it for the `tmux` kind;
* the start step, `ProcessWorkers` (`corral/orchestration/host/_launch.py`): the host's default
  for a worker runtime of `corral worker` processes (tmux is the one today), and the launch file it
  writes and the worker reads (`corral/orchestration/host/_worker.py`).

The package itself imports nothing, so importing one module of it loads only that module.
"""
