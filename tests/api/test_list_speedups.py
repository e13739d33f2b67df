"""The shortcuts the list pages take must give what the general code gives (issue 6): times written as
the renderer writes them, item URLs as reverse() makes them, timestamps as Django's loader reads them,
and the throttle's script run even on a Redis server that has forgotten it."""
import datetime
import json
import zoneinfo
from urllib.parse import quote

import pytest
from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection
from django.urls import reverse
from redis.exceptions import NoScriptError

from digests.factories import DigestFactory
from digests.models import Digest
from api import responses, throttling
from publishing.compiled import load_timestamps_natively
from tests.site.helpers import prepared_statements

UTC = datetime.timezone.utc


@pytest.mark.parametrize("microsecond", [0, 1, 500, 999, 1000, 123456, 999999])
@pytest.mark.parametrize("tz", [UTC, zoneinfo.ZoneInfo("UTC"), datetime.timezone(datetime.timedelta(hours=-5))])
def test_moment_text_is_djangos_encoding(microsecond, tz):
    moment = datetime.datetime(2026, 3, 9, 4, 5, 6, microsecond, tzinfo=tz)
    assert responses.moment_text(moment) == json.loads(json.dumps(moment, cls=DjangoJSONEncoder))
    assert responses.moment_text(moment) == responses.JSONRenderer.default(moment)
    assert responses.moment_text(None) is None


@pytest.mark.parametrize("viewname", ["digests:detail", "blog:post"])
def test_url_maker_is_reverse(viewname):
    for slug in ("plain-slug_1", "A-Z_09", "x"):
        assert responses.url_maker(viewname)(slug) == reverse(viewname, args=[slug])


@pytest.mark.parametrize("slug", ["plain", "café", "a b", "ümlaut-ß", "x%y", "q?x#y", "a/b", "~:@!$&'()*+,;=.", ""])
def test_url_maker_quotes_what_reverse_would_quote(slug):
    """Slugs outside the URL pattern never reach it, but any that did would be quoted as reverse() quotes."""
    prefix = reverse("blog:post", args=["x"])[:-2]
    assert responses.url_maker("blog:post")(slug) == prefix + quote(slug, safe=responses.SLUG_SAFE) + "/"


class ForgetfulRedis:
    """A client whose server lacks the script until it is loaded."""

    def __init__(self):
        self.loaded, self.calls = False, []

    def evalsha(self, sha, numkeys, *keys_and_args):
        self.calls.append(("EVALSHA", sha))
        if not self.loaded:
            raise NoScriptError("NOSCRIPT No matching script.")
        return [1]

    def script_load(self, script):
        self.calls.append(("SCRIPT LOAD", script))
        self.loaded = True
        return throttling.SLIDING_WINDOW_SHA


def test_the_throttle_loads_its_script_into_a_server_that_lacks_it():
    client = ForgetfulRedis()
    assert throttling._sliding_window(client, "key", ("1", "0", 5, 60, "member")) == [1]
    assert [name for name, _ in client.calls] == ["EVALSHA", "SCRIPT LOAD", "EVALSHA"]
    assert client.calls[1][1] == throttling.SLIDING_WINDOW_SCRIPT
    assert throttling._sliding_window(client, "key", ("1", "0", 5, 60, "member")) == [1]
    assert len(client.calls) == 4  # loaded now: one round trip


def test_rates_are_parsed_as_ninja_parses_them():
    throttle = throttling.PerIPThrottle("list_ip")
    for rate in ("5/m", "100/h", "1000000/s", "2/d"):
        assert throttling._parsed_rate(throttle, rate) == throttle.parse_rate(rate)


@pytest.mark.django_db
@pytest.mark.skipif(connection.vendor != "postgresql", reason="psycopg's loader is PostgreSQL's")
def test_psycopgs_timestamp_loader_reads_what_djangos_reads():
    for microsecond in (0, 500, 123456):
        DigestFactory(published_at=datetime.datetime(2026, 1, 2, 3, 4, 5, microsecond, tzinfo=UTC))
    sql = 'SELECT "published_at", "updated_at", "created_at" FROM "digests_digest" ORDER BY "id"'
    with connection.cursor() as cursor:
        cursor.execute(sql)
        djangos = cursor.fetchall()
    with connection.cursor() as cursor:
        load_timestamps_natively(cursor)
        assert not type(cursor.cursor.adapters.get_loader(1184, 0)).__module__.startswith("django")  # timestamptz
        cursor.execute(sql)
        natives = cursor.fetchall()
    assert natives == djangos and len(natives) == 3
    assert all(value.tzinfo is UTC for row in natives for value in row)
    assert [row[0].microsecond for row in natives] == [0, 500, 123456]
    assert Digest.objects.count() == 3


@pytest.mark.django_db
@pytest.mark.parametrize("header, status, detail", [
    (None, 200, None),
    ("", 200, None),
    ("Basic dXNlcjpwYXNz", 401, "Send API tokens as “Authorization: Bearer <token>”."),
    ("Bearer not-a-token", 401, "Invalid or revoked API token."),
    ("Bearer", 401, "Invalid or revoked API token."),
])
def test_public_operations_take_a_token_or_nothing(client, header, status, detail):
    """TokenAuth(optional=True) answers as [TokenAuth(), anonymous] did."""
    headers = {} if header is None else {"HTTP_AUTHORIZATION": header}
    for url in ("/api/v1/digests/", "/api/v1/posts/", "/api/v1/topics/"):
        response = client.get(url, **headers)
        assert response.status_code == status
        if detail:
            assert response.json() == {"detail": detail, "errors": []}
            assert response["WWW-Authenticate"] == 'Bearer realm="api"'


@pytest.mark.django_db
def test_public_operations_read_drafts_with_a_token(client, publisher, make_token):
    from publishing.workflow import Status

    DigestFactory(status=Status.DRAFT, published_at=None)
    assert client.get("/api/v1/digests/").json()["items"] == []
    headers = {"HTTP_AUTHORIZATION": f"Bearer {make_token(publisher, 'read:drafts')}"}
    assert len(client.get("/api/v1/digests/", **headers).json()["items"]) == 1


@pytest.mark.django_db
@pytest.mark.skipif(connection.vendor != "postgresql", reason="prepared statements are PostgreSQL's (psycopg)")
def test_filtered_lists_and_tag_feeds_are_planned_for_each_request(client, settings):
    """A filter's best plan depends on how many rows it keeps: psycopg must never prepare a filtered
    page's statement, where PostgreSQL could settle on one generic plan for every tag."""
    from blog.factories import PostFactory

    settings.PAGE_CACHE_ENABLED = False  # every feed request runs its query
    PostFactory.create_batch(3, tags=["numbat", "quoll"])

    def run():
        assert client.get("/api/v1/posts/?tag=numbat").status_code == 200
        assert client.get("/tags/quoll/feed.atom").status_code == 200

    prepared = prepared_statements(run, "%blog_taggedpost%")
    pages = [sql for sql in prepared if sql.startswith("SELECT") and 'FROM "blog_post"' in sql and "ORDER BY" in sql]
    assert not pages, pages
