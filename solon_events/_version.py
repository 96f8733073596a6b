"""The package's version, written once: pyproject.toml and ``solon_events.__version__`` read it."""

__version__ = "0.1.0"
