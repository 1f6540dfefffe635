"""Checkpoints: records, their SQL and revalidation."""
