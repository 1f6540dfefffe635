"""Assigned checks: policy, runner, fingerprints, records and their SQL."""
