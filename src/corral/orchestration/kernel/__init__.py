"""The agent-API kernel: generations, requests, asks, results, delivery, lifecycle, the managed child."""
