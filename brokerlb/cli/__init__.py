"""The ``brokerlb`` console command (typer + rich)."""
