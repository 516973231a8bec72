"""The memory engine's dashboard pages: memories and one memory, core memory,
the triage queue, the embedder page, and their forms."""
