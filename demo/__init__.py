"""Demo content: the design documents in demo/seeds/ and the importers that load them (manage.py import_seeds)."""
