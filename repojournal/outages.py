"""What a request gets while the database is away: 503 with ``Retry-After``, never a 500; and 409 for a lost lock.

PostgreSQL restarting or failing over raises ``OperationalError`` / ``InterfaceError`` from
whatever query a view runs. As a 500 it told clients the request was wrong and was logged
as a bug; it is an outage, and a retry soon will work. So: ``503 Service Unavailable``,
``Retry-After`` (``OUTAGE_RETRY_AFTER`` seconds), ``Cache-Control: no-store`` (no cache may
keep it), JSON under ``/api/`` and a short page elsewhere. Reads are mostly served by the
edge meanwhile (it holds the pages, and serves them stale while ``/health/ready/`` fails:
deploy/varnish/default.vcl); writes -- the admin, the API, webhooks (which answer their
own 503: ingestion/views.py) -- get this and are retried by their clients. docs/operations.md
"Failure modes" has the table.

A lock conflict (a deadlock, a serialization failure, a lock timeout: ``publishing.locks``) is an
``OperationalError`` too, but the database answered: another write needed the same rows at the
same moment. A write is answered ``409 Conflict`` -- the API's error shape under ``/api/``, a short page
elsewhere -- saying that nothing was saved and to send it again. The writes that can meet so try
once more before it comes to that (``retry_on_lock_conflict``), and the admin's change form answers
with the form itself (``publishing.admin``).
"""
import logging

from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.http import HttpResponse, JsonResponse
from django.template import loader
from django.utils.cache import add_never_cache_headers

from api.errors import ErrorOut
from publishing.locks import API_DETAIL, is_lock_conflict

logger = logging.getLogger(__name__)

#: A read that meets a lock (SQLite's single writer busy past its timeout under `make run`) saved nothing and
#: should simply be retried: it gets the 503 with Retry-After, which the edge retries or serves stale for,
#: not a 409 page about a save.
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


class DatabaseOutageMiddleware:
    """Turns a lost database connection raised by a view into a 503, and a lost lock conflict into a 409
    (no other middleware handles exceptions)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if not isinstance(exception, (OperationalError, InterfaceError)):
            return None
        if is_lock_conflict(exception) and request.method not in SAFE_METHODS:
            logger.warning("%s %s answered 409: it lost a lock conflict (%s).", request.method, request.path,
                           str(exception).strip())
            return conflict(request)
        logger.warning("%s %s answered 503: the database is unavailable (%s).", request.method, request.path,
                       exception)
        return unavailable(request)


def unavailable(request) -> HttpResponse:
    if request.path.startswith("/api/"):
        detail = "The database is unavailable; retry shortly."
        response = JsonResponse(ErrorOut(detail=detail).model_dump(), status=503)  # the API's one error shape
    else:
        response = HttpResponse(loader.render_to_string("503.html"), status=503)
    response["Retry-After"] = str(settings.OUTAGE_RETRY_AFTER)
    add_never_cache_headers(response)
    return response


def conflict(request) -> HttpResponse:
    """409: nothing was saved, because another write held the same rows; sending it again will do."""
    if request.path.startswith("/api/"):
        response = JsonResponse(ErrorOut(detail=API_DETAIL).model_dump(), status=409)
    else:
        response = HttpResponse(loader.render_to_string("409.html"), status=409)
    add_never_cache_headers(response)
    return response
