"""`nanohermes acp`: the Agent Client Protocol server (SPEC §9), a front end beside `ui/`.

`main.serve` runs it on stdio (`transport`: framing that answers bad input) and routes JSON-RPC to
`server`; a `session` runs each prompt on a thread of its own. Importing this package loads nothing.
"""
