"""The agent-API kernel: generations, requests, asks, results, delivery, lifecycle, the managed child.

The package re-exports only `fault_point` (crash tests' `CORRAL_FAULTS`), for the places outside the
kernel that mark a crash window of their own (`corral mcp`, `corral acp`, a harness agent's session
made ready); import everything else from the module that defines it.
"""

from __future__ import annotations

from ._faults import fault_point

__all__ = ["fault_point"]
