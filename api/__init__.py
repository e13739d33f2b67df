"""The shared parts of the API: token auth, throttles, cursor pagination, errors, JSON responses.

Each content app keeps its own ``api.py`` router and ``schemas.py``; ``repojournal/api.py`` assembles them."""
