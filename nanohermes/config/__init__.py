"""Settings (SPEC §2): the config file, the environment and flags, read once at start-up."""
