"""Agent definitions: the bundled, user and project Markdown files and the roster built from them.

The bundled definitions live in `bundled/`; `_roster.py` parses, merges and checks the layers.
Everything in the core may read definitions; definitions import nothing of the core but its errors.
"""
