"""HTTP routes, one module per concept: units, search, governance, graph, session."""
