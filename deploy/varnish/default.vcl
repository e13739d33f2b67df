# RepoJournal's edge: Varnish in front of two gunicorn instances (docs/deployment.md explains
# every line). deploy/topology.py renders this file for `make up` and tests/edge: it replaces
# the backend ports and the purgers ACL, nothing else, so what the tests prove is what runs.
vcl 4.1;

import directors;
import std;
import xkey;

# Liveness: the process answers (/health/live/ asks no dependency, repojournal/health.py). The edge
# routes by it alone: an instance whose Redis or PostgreSQL is away still stores webhook deliveries
# or answers a 503 with Retry-After itself, so neither outage takes it out of the edge (a probe of
# every dependency turned a Redis restart into 503s for every uncached request). A backend is
# healthy while 2 of the last 3 probes answered 200; it starts healthy so `make up` serves at once.
probe live {
    .request =
        "GET /health/live/ HTTP/1.1"
        "Host: localhost"
        "Connection: close";
    .expected_response = 200;
    .interval = 1s;
    .timeout = 2s;
    .window = 3;
    .threshold = 2;
    .initial = 2;
}

# Readiness for pages: can the instance read its database (/health/ready/)? Not for routing
# (app1_database and app2_database receive no request but this probe): while no instance can,
# the edge serves what it holds for as long as the page's stale-if-error allows (vcl_recv).
probe ready {
    .request =
        "GET /health/ready/?format=text HTTP/1.1"
        "Host: localhost"
        "Accept: text/plain"
        "Connection: close";
    .expected_response = 200;
    .interval = 2s;
    .timeout = 2s;
    .window = 3;
    .threshold = 2;
    .initial = 2;
}

backend app1 {
    .host = "127.0.0.1";
    .port = "8001";
    .probe = live;
    .connect_timeout = 1s;
    .first_byte_timeout = 30s;
}

backend app2 {
    .host = "127.0.0.1";
    .port = "8002";
    .probe = live;
    .connect_timeout = 1s;
    .first_byte_timeout = 30s;
}

backend app1_database {
    .host = "127.0.0.1";
    .port = "8001";
    .probe = ready;
}

backend app2_database {
    .host = "127.0.0.1";
    .port = "8002";
    .probe = ready;
}

# Who may purge: the app servers (their Celery workers send the purges). Anyone else gets 405.
acl purgers {
    "127.0.0.1";
    "::1";
}

sub vcl_init {
    new app = directors.round_robin();
    app.add_backend(app1);
    app.add_backend(app2);
    # Healthy while any instance reads its database: std.healthy() asks it, nothing is sent through it.
    new database = directors.fallback();
    database.add_backend(app1_database);
    database.add_backend(app2_database);
}

sub vcl_recv {
    set req.backend_hint = app.backend();
    # The reader's own address, overwriting whatever the client sent: the app's sign-in lockouts
    # and throttles count per address (AXES_IPWARE_META_PRECEDENCE_ORDER=HTTP_X_REAL_IP,REMOTE_ADDR).
    set req.http.X-Real-IP = client.ip;

    if (req.method == "PURGE") {
        if (client.ip !~ purgers) {
            return (synth(405, "Purging is not allowed from " + client.ip));
        }
        if (req.http.xkey-purge) {
            # Hard purge: the next reader fetches the new version (a soft purge would serve
            # the old one once more while refreshing it in the background).
            set req.http.X-Purged = xkey.purge(req.http.xkey-purge);
            return (synth(200, "Purged " + req.http.X-Purged + " objects"));
        }
        return (purge);
    }

    # Only reads are ever cached; writes, webhooks, the admin, previews and health go to the app.
    if (req.method != "GET" && req.method != "HEAD") {
        return (pass);
    }
    if (req.url ~ "^/(admin|webhooks|health)(/|\?|$)" || req.url ~ "^/preview/") {
        return (pass);
    }
    # A credential means the answer may show drafts: never shared.
    if (req.http.Authorization || req.http.Cookie ~ "(^|;\s*)sessionid=") {
        return (pass);
    }
    # Every other cookie (a stale csrftoken, analytics) changes nothing on a reader's page: drop
    # them so the page is shared and Django sees an anonymous request.
    unset req.http.Cookie;

    # stale-while-revalidate: while the app can render pages, a stale page is served for at most
    # 60 s while it is refetched. While no instance answers, or none can read its database, the
    # object's whole grace applies (stale-if-error, set in vcl_backend_response).
    if (std.healthy(req.backend_hint) && std.healthy(database.backend())) {
        set req.grace = 60s;
    }
    return (hash);
}

sub vcl_purge {
    return (synth(200, "Purged"));
}

sub vcl_backend_fetch {
    # A retry goes to the instance that did not just fail (asking the round robin again could
    # land on the dead one: other requests move it along meanwhile).
    if (bereq.retries == 0) {
        set bereq.backend = app.backend();
    } elsif (bereq.http.X-Failed-Backend == "app1") {
        set bereq.backend = app2;
    } else {
        set bereq.backend = app1;
    }
    unset bereq.http.X-Failed-Backend;
}

sub vcl_backend_response {
    # A failing app during a background refresh: keep serving the stale copy (stale-if-error).
    if (beresp.status >= 500 && bereq.is_bgfetch) {
        return (abandon);
    }
    if (beresp.status >= 500 && bereq.retries < 1 && bereq.method ~ "^(GET|HEAD)$") {
        set bereq.http.X-Failed-Backend = beresp.backend;
        return (retry);
    }
    # Deliver a response only once its body is complete: an instance killed mid-body then fails
    # the fetch (restarted once in vcl_synth) instead of truncating the reader's page.
    set beresp.do_stream = false;
    # xkey indexes the object under the keys the app named (Surrogate-Key, as Fastly reads it).
    if (beresp.http.Surrogate-Key) {
        set beresp.http.xkey = beresp.http.Surrogate-Key;
    }
    # Never store what is private, not-to-be-stored, sets a cookie or has no lifetime; remember
    # for 2 minutes not to queue readers behind it (hit-for-miss).
    if (bereq.uncacheable) {
        return (deliver);
    }
    if (beresp.ttl <= 0s
        || beresp.http.Set-Cookie
        || beresp.http.Cache-Control ~ "(?i)(private|no-store|no-cache)"
        || beresp.http.Vary == "*") {
        set beresp.ttl = 120s;
        set beresp.uncacheable = true;
        return (deliver);
    }
    # s-maxage gave beresp.ttl; stale-if-error gives how long a stale copy is kept for outages.
    if (beresp.http.Cache-Control ~ "stale-if-error=\d+") {
        set beresp.grace = std.duration(
            regsub(beresp.http.Cache-Control, "^.*stale-if-error=(\d+).*$", "\1s"), 60s);
    } elsif (beresp.http.Cache-Control ~ "stale-while-revalidate=\d+") {
        set beresp.grace = std.duration(
            regsub(beresp.http.Cache-Control, "^.*stale-while-revalidate=(\d+).*$", "\1s"), 10s);
    }
    call compress_fetch;  # issue 25: compression, below
    return (deliver);
}

sub vcl_synth {
    # A fetch that failed (an instance died while sending the body): try the whole request once more.
    if (resp.status == 503 && req.restarts < 1 && req.method ~ "^(GET|HEAD)$") {
        return (restart);
    }
}

sub vcl_backend_error {
    # Connection refused or timed out (an instance just died): try the other one before the
    # probes notice. Only reads are retried; a POST may have reached the app.
    if (bereq.retries < 2 && bereq.method ~ "^(GET|HEAD)$") {
        set bereq.http.X-Failed-Backend = beresp.backend;
        return (retry);
    }
}

sub vcl_deliver {
    if (obj.hits > 0) {
        set resp.http.X-Cache = "HIT";
    } else {
        set resp.http.X-Cache = "MISS";
    }
    # Internal headers stay inside, unless a purger asks with X-Edge-Debug: 1.
    if (!(req.http.X-Edge-Debug && client.ip ~ purgers)) {
        unset resp.http.Surrogate-Key;
        unset resp.http.Cache-Tag;
        unset resp.http.xkey;
        unset resp.http.X-Page-Cache;
        unset resp.http.X-Varnish;
        unset resp.http.Via;
    }
}

# --- Compression (issue 25; docs/deployment.md "Compression and static files") -----------------
# Called once, at the end of vcl_backend_response. Varnish stores the object gzipped, adds
# Accept-Encoding to its Vary (for the caches after it) and gunzips it on delivery for a reader
# who does not accept gzip. With http_gzip_support on (the default) Varnish itself does not vary
# on Accept-Encoding: one stored object per URL serves both kinds of reader, and a purge drops it.
# Debian's Varnish has no Brotli module (docs).
#
# Only what is stored and shared by every reader gets here: no credentials, no cookie set, so
# nothing secret for a BREACH-style attack to guess, and the strong ETags the API's If-Match
# needs (passed, token-holding requests) are never weakened by a gzip. Text only; PNG social
# cards, and what the app already compressed (WhiteNoise's .gz static files), stay as they are.
sub compress_fetch {
    if (!beresp.http.Content-Encoding && beresp.status != 206
        && beresp.http.Content-Type ~ "(?i)^(text/[a-z.+-]+|image/svg\+xml|font/(ttf|otf)|application/(json|javascript|xml|[a-z.-]+\+(json|xml)))\s*(;|$)") {
        set beresp.do_gzip = true;
    }
}
# --- end of compression ---------------------------------------------------------------------
