"""Small programs on the coordination API (process-level tests, demos)."""
