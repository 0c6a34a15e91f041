"""windows layer (see DESIGN.md)."""
