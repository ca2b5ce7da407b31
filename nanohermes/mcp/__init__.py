"""MCP client (SPEC §10): Model Context Protocol servers add tools.

    config.py      McpServerConfig (the `[mcp_servers.NAME]` table), the JSON `mcpServers` form, ACP's form
    manager.py     McpManager: one asyncio loop thread; servers start in the background; sync API
    connection.py  one server's SDK client (imported on the loop thread only: the `mcp` SDK loads there)
    results.py     a CallToolResult as the text the model sees
    tools.py       server tools → `nanohermes.tools.base.Tool` objects named `mcp__<server>__<tool>`

Importing this package loads neither the SDK nor asyncio: `mcp` is imported only when a server is
configured, on the manager's thread.
"""
