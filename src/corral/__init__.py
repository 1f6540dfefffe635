"""corral: teams of coding agents that a lead controls."""

__version__ = "0.1.0"
