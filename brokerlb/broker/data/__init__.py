"""The topics a broker serves: the data path behind the binary and WebSocket shells, their registry and stats."""
