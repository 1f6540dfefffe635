"""The agent-API kernel: generations, requests, asks, results, delivery, lifecycle, the managed child.

The package re-exports only `fault_point` (crash tests' fault injection), for the front ends above
the core (`corral mcp`, `corral acp`); import everything else from the module that defines it.
"""

from __future__ import annotations

from ._faults import fault_point

__all__ = ["fault_point"]
