"""Settings split by environment: base (shared, read from the environment), dev, test, prod."""
