"""Completion groups: grouped delivery of reports, records and their SQL."""
