"""Production: refuses to start with DEBUG on or without a real secret key."""
import os

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

# --- HTTPS (issue 17; docs/operations.md "Security"): `manage.py check --deploy` passes with no warning ---
# on the defaults. The proxy in front terminates TLS and must set X-Forwarded-Proto (and strip a
# client's own); Django then knows a request came over https. Sites that serve plain HTTP
# (`make up` on one machine) set DJANGO_SECURE_COOKIES=0, which also turns off the redirect and
# HSTS unless those are set themselves.
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SESSION_COOKIE_SECURE = env_bool("DJANGO_SECURE_COOKIES", True)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", SESSION_COOKIE_SECURE)
SECURE_REDIRECT_EXEMPT = [r"^health/"]  # the edge probes the backends over plain HTTP
SECURE_HSTS_SECONDS = int(os.environ.get("DJANGO_SECURE_HSTS_SECONDS", "31536000" if SESSION_COOKIE_SECURE else "0"))
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = env_bool("DJANGO_SECURE_HSTS_PRELOAD", True)
# Turned off on purpose (TLS and its redirect handled by the edge, HSTS sent by it): not a warning.
SILENCED_SYSTEM_CHECKS = [
    *(["security.W008"] if os.environ.get("DJANGO_SECURE_SSL_REDIRECT") == "0" else []),
    *(["security.W004"] if os.environ.get("DJANGO_SECURE_HSTS_SECONDS") == "0" else []),
]

# --- Topology (issue 16, docs/deployment.md): gunicorn serves /static/ itself (WhiteNoise), so the
# edge caches it like any page and `make up` needs no web server besides Varnish.
MIDDLEWARE = [*MIDDLEWARE[:1], "whitenoise.middleware.WhiteNoiseMiddleware", *MIDDLEWARE[1:]]  # noqa: F405

# --- Bytes on the wire (issue 25, docs/deployment.md "Compression and static files"): collectstatic
# writes each file under a name carrying a hash of its content (css/site.<hash>.css, url() references
# inside CSS rewritten to match) plus a gzipped copy; templates reach them through {% static %}.
# WhiteNoise serves a hashed name with `Cache-Control: max-age=315360000, public, immutable` (a new
# stylesheet is a new URL, so a year in every cache is safe) and the gzipped copy to readers that
# accept it; the unhashed originals stay, with WHITENOISE_MAX_AGE (60 s). A missing manifest entry is
# an error, so `make up` (deploy/topology.py) runs collectstatic before serving.
STORAGES = {
    **STORAGES,  # noqa: F405  (default, and the images' storages: base.py)
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
