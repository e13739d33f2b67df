"""Production: refuses to start with DEBUG on or without a real secret key."""
from django.core.exceptions import ImproperlyConfigured

from .base import *  # noqa: F403
from .base import SECRET_KEY, env_bool

DEBUG = env_bool("DJANGO_DEBUG", False)
if DEBUG:
    raise ImproperlyConfigured("DJANGO_DEBUG must be off in production settings.")
if (
    len(SECRET_KEY) < 32
    or len(set(SECRET_KEY)) < 5  # as Django's security.W009 check: "a" * 40 is not a secret
    or SECRET_KEY.startswith(("dev-", "test-", "django-insecure"))
):
    raise ImproperlyConfigured("DJANGO_SECRET_KEY must be set to a random value of at least 32 characters.")

SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SESSION_COOKIE_SECURE = env_bool("DJANGO_SECURE_COOKIES", True)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_CONTENT_TYPE_NOSNIFF = True

# --- Topology (issue 16, docs/deployment.md): gunicorn serves /static/ itself (WhiteNoise), so the
# edge caches it like any page and `make up` needs no web server besides Varnish.
MIDDLEWARE = [*MIDDLEWARE[:1], "whitenoise.middleware.WhiteNoiseMiddleware", *MIDDLEWARE[1:]]  # noqa: F405
