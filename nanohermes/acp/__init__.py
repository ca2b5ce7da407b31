"""`nanohermes acp`: the Agent Client Protocol server (SPEC §9), a front end beside `ui/`, started by
`main.serve`. Importing this package loads nothing."""
