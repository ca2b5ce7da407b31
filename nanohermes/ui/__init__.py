"""Terminal UI: the only package that imports rich or prompt_toolkit."""
