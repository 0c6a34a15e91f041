"""adapters layer (see DESIGN.md)."""
