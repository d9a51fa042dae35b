"""The broker's load report: host usage (measured or modelled from traffic) written to the registry."""
