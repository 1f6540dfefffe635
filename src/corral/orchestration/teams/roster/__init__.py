"""Team members, messages and file claims: records and their SQL."""
