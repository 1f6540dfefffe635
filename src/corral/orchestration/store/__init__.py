"""The database: connection, transactions, numbered migrations and schema steps, the one `JSON.stringify` encoder.

`Tx` (one open transaction) is re-exported for the layers that hand a transaction on without
running SQL themselves (the launch pipeline's `LaunchSteps.record_in`).
"""

from corral.orchestration.store._database import Tx

__all__ = ["Tx"]
