"""Settings shared by every environment.

Everything that differs between machines comes from the environment, with defaults
that are safe for a laptop: SQLite in the project folder, tasks run inline, a
local-memory cache. Setting DATABASE_URL / REDIS_URL switches to PostgreSQL / Redis.
"""
import datetime
import os
from pathlib import Path

import dj_database_url

from .env import env_bool, env_list  # noqa: F401 (dev, prod and bench import them from here)

BASE_DIR = Path(__file__).resolve().parent.parent.parent
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
DEBUG = env_bool("DJANGO_DEBUG", False)
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]")
SITE_URL = os.environ.get("SITE_URL", "http://127.0.0.1:8000").rstrip("/")
INSTALLED_APPS = [
    "newsroom.apps.NewsroomAdminConfig",  # Django's admin, its front page the newsroom (newsroom/sites.py)
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "taggit",
    "reversion",
    "health_check",  # /health/, probed by the edge (repojournal/urls.py)
    "axes",
    "accounts",
    "images",
    "digests",
    "blog",
    "reader",
    "ingestion",
    "demo",
    "edge",
    "outbound",
    "newsroom",
    "editbar",  # the staff edit bar on public pages (issue 26)
    "newsletters",  # readers following by email (issue 27)
    "fediverse",  # actors, WebFinger, NodeInfo (issue 38; docs/fediverse.md)
    "editing",  # presence and autosave on the admin's change forms (issue 37; docs/editing.md)
    "anymail",
    "repojournal",  # the wiring; an app only for its command run_schedule (`make run`'s beat, repojournal/schedule.py)
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "edge.middleware.EdgeCacheMiddleware",  # outside sessions/CSRF: sees their cookies and Vary
    "csp.middleware.CSPMiddleware",  # outside the page cache, so cached pages get the header too
    "django_permissions_policy.PermissionsPolicyMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "axes.middleware.AxesMiddleware",  # turns axes' lockout into accounts.lockout.locked_out's page
    # A lost database is a 503, not a 500 (process_exception: the only one, so its place is free).
    "repojournal.outages.DatabaseOutageMiddleware",
    "fediverse.negotiation.ActivityNegotiationMiddleware",  # answers activity+json before the page cache looks
    "reader.caching.PageCacheMiddleware",  # outer middleware adds its headers to cached pages
    "edge.middleware.SurrogateKeyMiddleware",  # inside the page cache: pages are stored with their keys
]
# Seconds a client is asked to wait (Retry-After) when the database is away (repojournal/outages.py).
OUTAGE_RETRY_AFTER = int(os.environ.get("OUTAGE_RETRY_AFTER", "30"))

ROOT_URLCONF = "repojournal.urls"
WSGI_APPLICATION = "repojournal.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "publishing.context_processors.navigation",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL") or f"sqlite:///{BASE_DIR / 'db.sqlite3'}",
        conn_max_age=int(os.environ.get("DATABASE_CONN_MAX_AGE", "0")),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # Parameters travel apart from the SQL (no quoting in Python), and a statement run more
    # than DATABASE_PREPARE_THRESHOLD times on a connection is prepared: PostgreSQL stops
    # re-planning the same reader queries (docs/operations.md). Behind a pooler in
    # transaction mode (PgBouncer < 1.21), set DATABASE_PREPARE_THRESHOLD to an empty value.
    _threshold = os.environ.get("DATABASE_PREPARE_THRESHOLD", "5")
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        server_side_binding=True, prepare_threshold=int(_threshold) if _threshold else None,
    )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Read replicas (issue 29; repojournal/replicas.py, docs/deployment.md "Read replicas"): one alias
# replica_N per URL in DATABASE_REPLICA_URLS (comma-separated; empty: the primary serves every read).
# Readers' reads go to a replica at most DATABASE_REPLICA_MAX_LAG seconds behind; nothing else does.
DATABASE_REPLICAS = []
for _number, _url in enumerate(filter(None, map(str.strip, os.environ.get("DATABASE_REPLICA_URLS", "").split(","))), 1):
    _replica = dj_database_url.parse(_url, conn_max_age=DATABASES["default"]["CONN_MAX_AGE"])
    # A replica that is away must cost a reader little: connecting gives up after 2 s.
    _replica["OPTIONS"] = {**DATABASES["default"].get("OPTIONS", {}), "connect_timeout": 2}
    _replica["TEST"] = {"MIRROR": "default"}  # test runs make no database for it
    DATABASES[f"replica_{_number}"] = _replica
    DATABASE_REPLICAS.append(f"replica_{_number}")
DATABASE_REPLICA_MAX_LAG = float(os.environ.get("DATABASE_REPLICA_MAX_LAG", "5"))
# How long a client that wrote, and every reader after a public change, reads the primary: longer than
# any replica that serves reads can be behind (its lag is checked once a second).
DATABASE_REPLICA_PIN_SECONDS = DATABASE_REPLICA_MAX_LAG + 2
if DATABASE_REPLICAS:
    DATABASE_ROUTERS = ["repojournal.replicas.ReplicaRouter"]
    # Just inside DatabaseOutageMiddleware: a replica's error is retried on the primary, not a 503.
    MIDDLEWARE.insert(MIDDLEWARE.index("repojournal.outages.DatabaseOutageMiddleware") + 1,
                      "repojournal.replicas.ReplicaRoutingMiddleware")

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
# English only. With translation machinery on, every reverse() and every printed
# variable asks for the active language (a context-local lookup): measurable on
# listing pages (docs/benchmarks.md).
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# Where collectstatic writes (and WhiteNoise serves from in production); tests/edge and the bench
# collect into their own temporary topology so they never touch the checkout's copy.
STATIC_ROOT = Path(os.environ.get("DJANGO_STATIC_ROOT") or BASE_DIR / "staticfiles")

LOGIN_URL = "admin:login"

# --- Images (issue 26, images/; docs/deployment.md "Images"): storages, limits, the S3 bucket ---
from .images import *  # noqa: E402, F403
from .images import images_origin  # noqa: E402
from .newsletters import *  # noqa: E402, F403
from .editing import *  # noqa: E402, F403 (presence and autosave; RETENTION_AUTOSAVE_DAYS)

# Redis is both the cache and the Celery broker. Without it the cache is local
# memory and Celery runs every task inline, so the site works with no services.
# The Redis backend is Django's, reusing one client per connection pool (reader/cache_backend.py).
REDIS_URL = os.environ.get("REDIS_URL", "")
if REDIS_URL:
    CACHES = {"default": {"BACKEND": "reader.cache_backend.RedisCache", "LOCATION": REDIS_URL}}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = None
CELERY_TASK_ALWAYS_EAGER = not REDIS_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TIMEZONE = TIME_ZONE
# --- Workers survive a Redis restart (issue 17): kombu 5.7.0's Redis transport with a workaround
# for the defect that made workers exit when Redis went away (repojournal/celery.py says why).
if REDIS_URL:
    CELERY_BROKER_TRANSPORT = "repojournal.celery:Transport"
# A worker never gives up on the broker (Celery's default stops after 100 attempts) and retries at startup too.
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True

# --- Ingestion (issue 5): GitHub webhooks and REST polling, feeds, drafted digests ---
# The secret shared with the GitHub webhook; without it every delivery is refused.
GITHUB_WEBHOOK_SECRET = os.environ.get("GITHUB_WEBHOOK_SECRET", "")
GITHUB_API_URL = os.environ.get("GITHUB_API_URL", "https://api.github.com").rstrip("/")
GITHUB_TOKEN = os.environ.get("GITHUB_TOKEN", "")
# Accounts whose activity is kept but left out of digests; "name" also matches "name[bot]".
INGESTION_BOT_LOGINS = env_list(
    "INGESTION_BOT_LOGINS",
    "dependabot,pytorchbot,pytorchmergebot,github-actions,facebook-github-bot,renovate,pre-commit-ci",
)
# Label patterns (fnmatch, case-insensitive) -> action item priority; the first match wins.
INGESTION_LABEL_PRIORITIES = [
    ("security", "immediate"),
    ("bc-breaking", "immediate"),
    ("breaking", "immediate"),
    ("topic: bc breaking", "immediate"),
    ("*deprecat*", "plan"),  # drafting: deprecations are something to plan for
    ("release notes: *", "plan"),
    ("feature", "plan"),
    ("enhancement", "plan"),
]
# Failed GitHub deliveries (issue 17): how far back the hook's delivery log is read, and how long
# before the same GUID may be requested again (ingestion/redelivery.py). GitHub keeps 3 days.
INGESTION_REDELIVERY_LOOKBACK = int(os.environ.get("INGESTION_REDELIVERY_LOOKBACK", str(24 * 3600)))
INGESTION_REDELIVERY_WINDOW = int(os.environ.get("INGESTION_REDELIVERY_WINDOW", "3600"))
# The GitHub token's one-poll-at-a-time lock is a lease this long, renewed while its holder lives:
# a worker killed mid-poll blocks polls and redelivery for at most this many seconds.
INGESTION_TOKEN_LEASE = int(os.environ.get("INGESTION_TOKEN_LEASE", "90"))
# A delivery still pending this long after it arrived, and not waiting in the queue, was lost (a worker
# killed holding it, Redis restarted): the sweep, every INGESTION_SWEEP_EVERY, queues it again.
INGESTION_SWEEP_AFTER = int(os.environ.get("INGESTION_SWEEP_AFTER", "15"))
INGESTION_SWEEP_EVERY = float(os.environ.get("INGESTION_SWEEP_EVERY", "10"))
# Drafting with a language model (issue 36, docs/drafting.md): any OpenAI-compatible Chat Completions API.
# Unset URL (the default): digests are drafted by the rule-based writer and nothing calls out. The URL
# goes through egress/, so a model server on a private address needs EGRESS_ALLOWED_NETWORKS.
DRAFTING_MODEL_URL = os.environ.get("DRAFTING_MODEL_URL", "").strip()
DRAFTING_MODEL = os.environ.get("DRAFTING_MODEL", "").strip()
DRAFTING_MODEL_API_KEY = os.environ.get("DRAFTING_MODEL_API_KEY", "")  # sent as a bearer token; never logged
DRAFTING_MODEL_TIMEOUT = float(os.environ.get("DRAFTING_MODEL_TIMEOUT", "120"))
DRAFTING_MODEL_MAX_INPUT_TOKENS = int(os.environ.get("DRAFTING_MODEL_MAX_INPUT_TOKENS", "24000"))
# How often beat sweeps outbound webhooks: scheduled content coming due, retries due (outbound.delivery).
OUTBOUND_SWEEP_SECONDS = float(os.environ.get("OUTBOUND_SWEEP_SECONDS", "30"))
# Sweeps expire after their period: with the workers away, beat's copies would otherwise pile up.
CELERY_BEAT_SCHEDULE = {
    "ingestion-dispatch-due-polls": {"task": "ingestion.tasks.dispatch_due_polls", "schedule": 60.0},
    "ingestion-sweep-deliveries": {"task": "ingestion.tasks.sweep_deliveries", "schedule": INGESTION_SWEEP_EVERY,
                                   "options": {"expires": INGESTION_SWEEP_EVERY}},
    "ingestion-redeliver-failed": {"task": "ingestion.tasks.redeliver_failed_deliveries",
                                   "schedule": float(os.environ.get("INGESTION_REDELIVERY_EVERY", "300"))},
    # Feeds due now: hourly after a success, sooner with backoff after a failure (FeedSource.retry_delay).
    "ingestion-fetch-feeds": {"task": "ingestion.tasks.fetch_due_feeds", "schedule": 300.0},
    # Outbound webhooks (issue 18): scheduled content coming due, and retries due (durable across restarts).
    "outbound-sweep": {"task": "outbound.tasks.sweep_outbound", "schedule": OUTBOUND_SWEEP_SECONDS,
                       "options": {"expires": OUTBOUND_SWEEP_SECONDS}},
    # The repository charts' tally (digests.models.tallies): publishes add rows, this sums them.
    "digests-fold-merge-tallies": {"task": "digests.tasks.fold_merge_tallies", "schedule": 300.0},
    # Images (issue 26): renditions whose task was lost are queued again (images.tasks.sweep_renditions).
    "images-sweep-renditions": {"task": "images.tasks.sweep_renditions", "schedule": 60.0, "options": {"expires": 60.0}},
    # og:image cards of posts and digests written without a save (publishing.social_cards.draw_missing).
    "blog-sweep-social-cards": {"task": "blog.tasks.sweep_social_cards", "schedule": 60.0,
                                "options": {"expires": 60.0}},
    "digests-sweep-social-cards": {"task": "digests.tasks.sweep_social_cards", "schedule": 60.0,
                                   "options": {"expires": 60.0}},
    # Retention (newsroom.retention, docs/operations.md "Retention"): tables that only grow, pruned.
    "newsroom-prune": {"task": "newsroom.tasks.prune", "schedule": 3600.0, "options": {"expires": 3600.0}},
    # Newsletters (issue 27): items published without a message, leases a killed worker held, due sends.
    "newsletters-sweep": {"task": "newsletters.tasks.sweep_newsletters", "schedule": NEWSLETTERS_SWEEP_SECONDS,  # noqa: F405
                          "options": {"expires": NEWSLETTERS_SWEEP_SECONDS}},  # noqa: F405
}

# Retention, in days (newsroom.retention): rows older than this that no open problem needs are pruned.
RETENTION_WEBHOOK_BODY_DAYS = int(os.environ.get("RETENTION_WEBHOOK_BODY_DAYS", "7"))
RETENTION_WEBHOOK_DELIVERY_DAYS = int(os.environ.get("RETENTION_WEBHOOK_DELIVERY_DAYS", "30"))
RETENTION_INGESTION_RUN_DAYS = int(os.environ.get("RETENTION_INGESTION_RUN_DAYS", "30"))
RETENTION_REDELIVERY_REQUEST_DAYS = int(os.environ.get("RETENTION_REDELIVERY_REQUEST_DAYS", "7"))
RETENTION_OUTBOUND_MESSAGE_DAYS = int(os.environ.get("RETENTION_OUTBOUND_MESSAGE_DAYS", "30"))
RETENTION_SIGN_IN_FAILURE_DAYS = int(os.environ.get("RETENTION_SIGN_IN_FAILURE_DAYS", "30"))
RETENTION_ACCESS_LOG_DAYS = int(os.environ.get("RETENTION_ACCESS_LOG_DAYS", "30"))
RETENTION_DRAFT_RESPONSE_DAYS = int(os.environ.get("RETENTION_DRAFT_RESPONSE_DAYS", "30"))

TAGGIT_CASE_INSENSITIVE = True

# Where `import_seeds` reads the design documents from: a copy of ../shared/seeds kept in the repo.
SEEDS_DIR = Path(os.environ.get("SEEDS_DIR", BASE_DIR / "demo" / "seeds"))

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
}

# API (repojournal/api.py): throttle rates per client IP and per token, "N/s|m|h|d".
# "list" covers list endpoints (the expensive queries), "write" every write.
API_THROTTLE_RATES = {
    "list_ip": os.environ.get("API_RATE_LIST_IP", "300/m"),
    "list_token": os.environ.get("API_RATE_LIST_TOKEN", "600/m"),
    "write_ip": os.environ.get("API_RATE_WRITE_IP", "60/m"),
    "write_token": os.environ.get("API_RATE_WRITE_TOKEN", "60/m"),
    # Presenting an unknown or revoked token: failures per client address (then 429 until the window ends).
    "token_failure_ip": os.environ.get("API_RATE_TOKEN_FAILURE_IP", "10/m"),
}

# --- Page cache (issue 6, reader/caching.py): whole reader pages for anonymous GETs, ---
# invalidated whenever content is saved or deleted, with ETag/Last-Modified so revisits get 304s.
PAGE_CACHE_ENABLED = env_bool("PAGE_CACHE_ENABLED", True)
PAGE_CACHE_SECONDS = int(os.environ.get("PAGE_CACHE_SECONDS", "600"))
# How long a worker serves pages from its own memory before asking Redis whether content changed.
PAGE_CACHE_LOCAL_SECONDS = float(os.environ.get("PAGE_CACHE_LOCAL_SECONDS", "1"))
PAGE_CACHE_VIEWS = {
    "home", "search", "sitemap", "robots",
    "digests:index", "digests:feed", "digests:detail", "digests:topics", "digests:topic", "digests:topic_feed",
    "digests:repository", "digests:repository_feed",
    "blog:index", "blog:feed", "blog:post", "blog:tags", "blog:tag", "blog:tag_feed", "blog:author",
    "blog:author_feed",
}

# --- Edge cache (issue 16, edge/): Cache-Control + Surrogate-Key on anonymous pages, purges after writes. ---
# docs/deployment.md "Edge contract". Browsers keep a page EDGE_MAX_AGE s, shared caches EDGE_S_MAXAGE s
# (purges, not expiry, make edits show), and may serve it stale while refetching or while the app is down.
EDGE_MAX_AGE = int(os.environ.get("EDGE_MAX_AGE", "60"))
EDGE_S_MAXAGE = int(os.environ.get("EDGE_S_MAXAGE", "86400"))
EDGE_STALE_WHILE_REVALIDATE = int(os.environ.get("EDGE_STALE_WHILE_REVALIDATE", "60"))
EDGE_STALE_IF_ERROR = int(os.environ.get("EDGE_STALE_IF_ERROR", "86400"))
# Paths never shared, whatever the request (besides sessions, Authorization, cookies set, writes).
EDGE_PRIVATE_PATHS = tuple(env_list("EDGE_PRIVATE_PATHS", "/admin/,/preview/,/webhooks/"))
# More objects of one kind on a page than this: the page lists "<kind>-any" instead of each one.
EDGE_MAX_KEYS_PER_KIND = int(os.environ.get("EDGE_MAX_KEYS_PER_KIND", "60"))
# Where purges go: none (default), varnish, fastly or cloudflare. Decided by the worker that sends them.
EDGE_PURGE_BACKEND = os.environ.get("EDGE_PURGE_BACKEND", "none")
# Whether writes record purges (edge.outbox) even where this process names no edge: on wherever a broker
# is shared (REDIS_URL), so a shell, a cron job or a management command purges the topology's edge.
EDGE_RECORD_PURGES = env_bool("EDGE_RECORD_PURGES", bool(REDIS_URL))
EDGE_VARNISH_URLS = env_list("EDGE_VARNISH_URLS")  # every node, e.g. http://127.0.0.1:8080
EDGE_FASTLY_API_URL = os.environ.get("EDGE_FASTLY_API_URL", "https://api.fastly.com").rstrip("/")
EDGE_FASTLY_SERVICE_ID = os.environ.get("EDGE_FASTLY_SERVICE_ID", "")
EDGE_FASTLY_API_TOKEN = os.environ.get("EDGE_FASTLY_API_TOKEN", "")
EDGE_FASTLY_SOFT_PURGE = env_bool("EDGE_FASTLY_SOFT_PURGE", False)
EDGE_CLOUDFLARE_API_URL = os.environ.get("EDGE_CLOUDFLARE_API_URL", "https://api.cloudflare.com").rstrip("/")
EDGE_CLOUDFLARE_ZONE_ID = os.environ.get("EDGE_CLOUDFLARE_ZONE_ID", "")
EDGE_CLOUDFLARE_API_TOKEN = os.environ.get("EDGE_CLOUDFLARE_API_TOKEN", "")
EDGE_CLOUDFLARE_TAGS_PER_CALL = int(os.environ.get("EDGE_CLOUDFLARE_TAGS_PER_CALL", "30"))
EDGE_PURGE_TIMEOUT = float(os.environ.get("EDGE_PURGE_TIMEOUT", "5"))
# Purges (edge.outbox) are retried with exponential backoff capped at this many seconds, for EDGE_PURGE_MAX_RETRIES tries.
EDGE_PURGE_RETRY_BACKOFF_MAX = int(os.environ.get("EDGE_PURGE_RETRY_BACKOFF_MAX", "60"))
EDGE_PURGE_MAX_RETRIES = int(os.environ.get("EDGE_PURGE_MAX_RETRIES", "10000"))
# How often beat sweeps for scheduled posts and digests whose time came (edge.scheduling).
EDGE_SCHEDULE_SWEEP_SECONDS = float(os.environ.get("EDGE_SCHEDULE_SWEEP_SECONDS", "2"))
CELERY_BEAT_SCHEDULE["edge-sweep-scheduled"] = {
    "task": "edge.tasks.sweep_scheduled", "schedule": EDGE_SCHEDULE_SWEEP_SECONDS,
    "options": {"expires": EDGE_SCHEDULE_SWEEP_SECONDS},
}
# How often beat sends the purges still owed (edge.outbox): lost tasks, and retries after a node failed.
EDGE_PURGE_SWEEP_SECONDS = float(os.environ.get("EDGE_PURGE_SWEEP_SECONDS", "5"))
CELERY_BEAT_SCHEDULE["edge-sweep-purges"] = {
    "task": "edge.tasks.sweep_purges", "schedule": EDGE_PURGE_SWEEP_SECONDS,
    "options": {"expires": EDGE_PURGE_SWEEP_SECONDS},
}

# --- Egress (issue 17, egress/): outbound requests to URLs an editor or a payload supplies ---
# refuse loopback, private, link-local, multicast and reserved addresses. CIDRs listed here are
# let through anyway (local development against a feed on 127.0.0.1, say); empty in production.
EGRESS_ALLOWED_NETWORKS = env_list("EGRESS_ALLOWED_NETWORKS")

# --- Outbound webhooks (issue 18, outbound/, docs/webhooks.md) ---
# Endpoint URLs must be https (tests and local development turn this off); addresses are checked by egress.
OUTBOUND_REQUIRE_HTTPS = env_bool("OUTBOUND_REQUIRE_HTTPS", True)
# Announcements owed (issue 39, outbound.outbox): rows written with the write, announced by a task after its
# commit. One still owed this many seconds later lost its task (a writer killed after the commit, the broker
# down then); beat's sweep announces it, every OUTBOUND_ANNOUNCE_SWEEP_SECONDS.
OUTBOUND_ANNOUNCE_SWEEP_AFTER = float(os.environ.get("OUTBOUND_ANNOUNCE_SWEEP_AFTER", "30"))
OUTBOUND_ANNOUNCE_SWEEP_SECONDS = float(os.environ.get("OUTBOUND_ANNOUNCE_SWEEP_SECONDS", "15"))
CELERY_BEAT_SCHEDULE["outbound-sweep-announcements"] = {
    "task": "outbound.tasks.sweep_announcements", "schedule": OUTBOUND_ANNOUNCE_SWEEP_SECONDS,
    "options": {"expires": OUTBOUND_ANNOUNCE_SWEEP_SECONDS},
}

# --- Sign-in lockouts (issue 17, django-axes; accounts/lockout.py, docs/operations.md) ---
# 10 failures for one username, or from one address (either locks), within the cool-off
# lock sign-in for an hour. Behind a proxy the client address comes from AXES_IPWARE_*.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
AXES_FAILURE_LIMIT = int(os.environ.get("AXES_FAILURE_LIMIT", "10"))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_COOLOFF_TIME = datetime.timedelta(minutes=int(os.environ.get("AXES_COOLOFF_MINUTES", "60")))
AXES_LOCKOUT_CALLABLE = "accounts.lockout.locked_out"
AXES_RESET_ON_SUCCESS = True  # a successful sign-in forgets that user's earlier failures
AXES_ENABLE_ACCESS_FAILURE_LOG = True  # every failure kept (AccessFailureLog), not only the counters
# The request header holding the client address. Behind the edge, which overwrites X-Real-IP with
# the address it saw (docs/operations.md): AXES_IPWARE_META_PRECEDENCE_ORDER=HTTP_X_REAL_IP,REMOTE_ADDR.
AXES_IPWARE_META_PRECEDENCE_ORDER = env_list("AXES_IPWARE_META_PRECEDENCE_ORDER", "REMOTE_ADDR")
AXES_IPWARE_PROXY_COUNT = int(os.environ["AXES_IPWARE_PROXY_COUNT"]) if os.environ.get("AXES_IPWARE_PROXY_COUNT") else None
AXES_IPWARE_PROXY_ORDER = os.environ.get("AXES_IPWARE_PROXY_ORDER", "left-most")

# --- Browser-side hardening (issue 17; docs/operations.md "Security") ---
# No page has inline script: JSON-LD blocks are data (never executed, so script-src does not
# apply) and the admin loads only files. So the policy needs neither nonces nor hashes, and a
# page cached by the edge or the page cache stays valid. A template that ever needs inline
# script writes <script nonce="{{ request.csp_nonce }}">: django-csp then adds that request's
# nonce to the header — never in a page the caches keep (the reader views), whose header the
# next request would not match; use a static file there.
from csp.constants import NONCE, NONE, SELF  # noqa: E402

CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF, NONCE],
        "style-src": [SELF],
        # Imported posts and references show images from anywhere; renditions may come from a bucket over http.
        "img-src": [SELF, "https:", "data:", *([images_origin()] if images_origin().startswith("http:") else [])],
        "object-src": [NONE],
        "base-uri": [SELF],
        "frame-ancestors": [NONE],
        "form-action": [SELF],
    },
}
PERMISSIONS_POLICY = {feature: [] for feature in (
    "accelerometer", "ambient-light-sensor", "autoplay", "camera", "display-capture", "encrypted-media",
    "fullscreen", "geolocation", "gyroscope", "magnetometer", "microphone", "midi", "payment",
    "picture-in-picture", "publickey-credentials-get", "screen-wake-lock", "serial", "usb", "xr-spatial-tracking",
)}
