"""MCP client (SPEC §10): Model Context Protocol servers add tools.

    manager.py     McpManager: one asyncio loop thread; servers start in the background; sync API
    connection.py  one server's SDK client (imported on the loop thread only: the `mcp` SDK loads there)
    logs.py        each stdio server's stderr in its own log file (rotated), never on the terminal
    results.py     a CallToolResult as the text the model sees
    status.py      what the manager tracks per server; ServerStatus for /mcp and `mcp list` (no SDK)
    tools.py       server tools → `nanohermes.tools.base.Tool` objects named `mcp__<server>__<tool>`

The configuration (McpServerConfig: the `[mcp_servers.NAME]` table, the JSON `mcpServers` form, ACP's
list) is `nanohermes.mcp_config`, beside `settings` which validates with it (below `tools`, which this
package builds on). Importing this package loads neither the SDK nor asyncio: `mcp` is imported only
when a server is configured, on the manager's thread.
"""
