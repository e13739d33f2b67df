"""Local development: DEBUG on by default and a throwaway secret key."""
from .base import *  # noqa: F403
from .base import env_bool

DEBUG = env_bool("DJANGO_DEBUG", True)
SECRET_KEY = SECRET_KEY or "dev-only-insecure-key-never-use-in-production"  # noqa: F405
# Outbound webhooks: a local receiver over plain http is fine while developing.
OUTBOUND_REQUIRE_HTTPS = env_bool("OUTBOUND_REQUIRE_HTTPS", False)
