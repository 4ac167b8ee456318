"""Serving: ``omnimem serve`` under concurrent HTTP load, the writer under a burst of adds, and MCP latency."""
