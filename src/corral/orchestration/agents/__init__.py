"""The `agent` tool's core: the controller, delegation, typed results, agent definitions."""
