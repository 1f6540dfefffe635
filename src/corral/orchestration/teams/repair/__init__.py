"""Bounded repair after failed checks, and the verifier."""
