"""The agent-API kernel: generations, requests, asks, results, delivery, lifecycle, the managed child.

What the features above it need is re-exported here: `Caller` (who calls a tool, `_caller.py`),
`ManagedChild` (a managed run in this process, `_child.py`) and `deliver_message` (a custom message
into an owner's session once, `_delivery.py`); all are loaded with the orchestration package anyway.
"""

from corral.orchestration.kernel._caller import Caller
from corral.orchestration.kernel._child import ManagedChild
from corral.orchestration.kernel._delivery import deliver_message

__all__ = ["Caller", "ManagedChild", "deliver_message"]
