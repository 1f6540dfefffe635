"""The database: connection, transactions, numbered migrations (and, for now, the `Store` façade)."""
