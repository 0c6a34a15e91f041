"""topology layer (see DESIGN.md)."""
