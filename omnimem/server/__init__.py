"""HTTP server (see docs/http-api.md)."""
