"""The database: connection, transactions, numbered migrations and schema steps, the one `JSON.stringify` encoder."""
