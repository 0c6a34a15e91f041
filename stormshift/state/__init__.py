"""state layer (see DESIGN.md)."""
