"""engines: the engines, and what both share (see ARCHITECTURE.md)."""
