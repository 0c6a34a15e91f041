"""topology: a streamparse project loaded into an immutable graph (see ARCHITECTURE.md)."""
