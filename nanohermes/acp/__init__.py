"""`nanohermes acp`: the Agent Client Protocol server (SPEC §9), a front end beside `ui/`.

    transport.py  stdio framing that answers bad input with JSON-RPC errors; stdout kept for protocol
    main.py       serve(): logging to stderr, the stdio connection, until stdin closes
    server.py     the ACP Agent: initialize, sessions (new/load/resume/close/list/mode), prompt, cancel
    listing.py    session/list of saved session files
    inbox.py      a turn's events handed from its worker thread to the event loop, text batched
    session.py    one session: a prompt's worker thread, events → session/update, permission requests
    convert.py    tool calls, prompt blocks and saved history ↔ ACP shapes
    clientfs.py   file tools that read and write through the editor (fs/read_text_file, …)
    commands.py   /compact, /memory, /reset as available commands

Importing this package loads nothing; the `acp` SDK is imported by the modules above, which only
`nanohermes acp` imports.
"""
