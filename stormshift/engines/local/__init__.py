"""engines/local layer (see DESIGN.md)."""
