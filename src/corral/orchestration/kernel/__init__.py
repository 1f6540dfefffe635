"""The agent-API kernel: generations, requests, asks, results, delivery, lifecycle, the managed child.

`fault_point` (crash tests' `CORRAL_FAULTS`) is the one name re-exported here, for the places outside
the kernel that mark a crash window of their own (a harness agent's session made ready).
"""

from corral.orchestration.kernel._faults import fault_point

__all__ = ["fault_point"]
