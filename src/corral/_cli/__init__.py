"""The `corral` command line: thin commands over the substrate (and later the host)."""
