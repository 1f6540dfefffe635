"""Spawning and placement of teams agents: admission, the queue, room on a Ray cluster, and launch.

`spawner.py`: `Spawner` (`spawn_agent`, `spawn_swarm_agents`, admission and the queue, Ray placement,
the read-only sandbox); `_launch.py`: a spawn's launch plan, its part of the host's launch
pipeline and its agent.
"""

__all__ = ["READ_TIER_TOOL_NAMES"]

READ_TIER_TOOL_NAMES: tuple[str, ...] = ("read", "bash", "grep", "find", "ls")
"""The built-in tools of a read tier's agent (its `bash` in the read-only sandbox where it works)."""
