"""The teams tool surface: wire parameters and tools."""
