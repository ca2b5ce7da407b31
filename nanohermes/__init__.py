"""nanohermes: a terminal coding agent with long-term memory and no vector database."""

__version__ = "0.1.0"
