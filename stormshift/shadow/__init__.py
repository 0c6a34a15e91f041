"""shadow layer (see DESIGN.md)."""
