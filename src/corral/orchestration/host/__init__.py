"""The host: live runs, runtimes, launch, handoff and the tmux worker's host side."""
