"""The agent-API kernel: generations, requests, asks, results, delivery, lifecycle, the managed child.

The package re-exports what the layers above it use (all loaded with the orchestration package
anyway): `Caller` (who calls a tool, `_caller.py`), `ManagedChild` (a managed run in this process,
`_child.py`), `deliver_message` (a custom message into an owner's session once, `_delivery.py`) and
`fault_point` (crash tests' `CORRAL_FAULTS`, for the places outside the kernel that mark a crash
window of their own: `corral mcp`, `corral acp`, a harness agent's session made ready); import
everything else from the module that defines it.
"""

from __future__ import annotations

from ._caller import Caller
from ._child import ManagedChild
from ._delivery import deliver_message
from ._faults import fault_point

__all__ = ["Caller", "ManagedChild", "deliver_message", "fault_point"]
