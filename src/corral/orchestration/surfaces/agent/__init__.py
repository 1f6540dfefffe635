"""The `agent` tool surface: wire parameters, tools and rendering."""
