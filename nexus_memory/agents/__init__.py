"""Agent interfaces: the tool registry and its handlers, the MCP server, the skills folder."""
