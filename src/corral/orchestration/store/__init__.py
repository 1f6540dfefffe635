"""The database: connection, transactions, numbered migrations and schema steps, the one `JSON.stringify` encoder.

What the features' repositories build on is re-exported here: `Database`, `Tx` (one open
transaction; also for the layers that hand a transaction on without running SQL themselves, the
launch pipeline's `LaunchSteps.record_in`), `Row`, the `Repository` base, `new_id` and
`require_text`.
"""

from corral.orchestration.store._database import Database, Row, Tx, new_id, require_text
from corral.orchestration.store._repository import Repository

__all__ = ["Database", "Repository", "Row", "Tx", "new_id", "require_text"]
