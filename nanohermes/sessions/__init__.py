"""Session files (SPEC §4.4): where they live, their format, their lock and autosave."""
