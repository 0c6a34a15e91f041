"""engines/spark layer (see DESIGN.md)."""
