"""The package version, importable without loading the package's façade."""

__version__ = "0.1.0"
