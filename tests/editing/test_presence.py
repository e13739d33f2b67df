"""Who else has an item's change form open (issue 37, presence): two editors see each other, a closed
tab drops at once and a silent one within the timeout, in the shared cache (Redis with REDIS_URL)."""
import datetime
import time

import pytest
from django.core.cache import caches
from django.utils import timezone

from blog.factories import PostFactory
from editing import presence
from publishing.workflow import Status

from .conftest import signed_in, url_of

pytestmark = pytest.mark.django_db


def beat(client, item) -> list:
    response = client.post(url_of(item, "presence"))
    assert response.status_code == 200, response.content
    return response.json()["others"]


def test_two_editors_on_one_post_see_each_other_since_they_opened_it(shared_cache, post, ada, bob):
    a, b = signed_in(ada), signed_in(bob)
    before = f"{timezone.localtime():%H:%M}"
    assert beat(a, post) == []
    seen_by_bob, seen_by_ada = beat(b, post), beat(a, post)
    minutes = {before, f"{timezone.localtime():%H:%M}"}  # the test may straddle a minute
    assert [entry["name"] for entry in seen_by_bob] == ["Ada Lovelace"] and seen_by_bob[0]["since"] in minutes
    assert [entry["name"] for entry in seen_by_ada] == ["Bob Kahn"] and seen_by_ada[0]["since"] in minutes


def test_presence_is_in_the_shared_cache_where_another_app_server_reads_it(shared_cache, post, ada, bob):
    beat(signed_in(ada), post)
    other_server = caches.create_connection("default")  # a client of its own, as another process has
    assert other_server.get(f"editing:presence:blog.post:{post.pk}") == [ada.pk]
    assert [entry["name"] for entry in presence.others(post, bob)] == ["Ada Lovelace"]


def test_a_closed_tab_leaves_at_once(shared_cache, post, ada, bob):
    a, b = signed_in(ada), signed_in(bob)
    beat(a, post)
    assert a.post(url_of(post, "presence"), {"leaving": "1"}).status_code == 204
    assert beat(b, post) == []


def test_an_editor_whose_tab_stopped_beating_is_dropped_within_the_timeout(shared_cache, settings, post, ada, bob):
    assert settings.EDITING_PRESENCE_TIMEOUT_SECONDS == 60
    start = timezone.now()
    presence.beat(post, ada, now=start)
    presence.beat(post, ada, now=start + datetime.timedelta(seconds=30))  # the next beat keeps "since"
    listed = presence.others(post, bob, now=start + datetime.timedelta(seconds=89))
    assert listed == [{"name": "Ada Lovelace", "since": start}]
    assert presence.others(post, bob, now=start + datetime.timedelta(seconds=91)) == []


def test_the_cache_entry_itself_expires(shared_cache, settings, post, ada, bob):
    """Not only filtered out: the entry is gone from the cache when its timeout passes (a real TTL)."""
    settings.EDITING_PRESENCE_TIMEOUT_SECONDS = 1
    presence.beat(post, ada)
    key = f"editing:presence:blog.post:{post.pk}:{ada.pk}"
    assert shared_cache.get(key) is not None
    deadline = timezone.now() + datetime.timedelta(seconds=5)
    while shared_cache.get(key) is not None and timezone.now() < deadline:
        time.sleep(0.05)  # polling for the cache's own expiry, which nothing signals
    assert shared_cache.get(key) is None
    assert presence.others(post, bob, now=timezone.now()) == []


def test_an_editor_back_after_the_timeout_is_listed_from_their_return(shared_cache, post, ada, bob):
    start = timezone.now()
    presence.beat(post, ada, now=start)
    back = start + datetime.timedelta(minutes=5)
    presence.beat(post, ada, now=back)
    assert presence.others(post, bob, now=back) == [{"name": "Ada Lovelace", "since": back}]


def test_each_item_has_its_own_presence(shared_cache, post, ada, bob):
    other_post = PostFactory(status=Status.DRAFT, published_at=None)
    beat(signed_in(ada), other_post)
    assert beat(signed_in(bob), post) == []


def test_an_index_that_lost_an_id_in_a_race_gets_it_back_on_the_next_beat(shared_cache, post, ada, bob):
    presence.beat(post, ada)
    presence.beat(post, bob)
    shared_cache.set(f"editing:presence:blog.post:{post.pk}", [bob.pk])  # Bob's write raced Ada's
    assert presence.others(post, bob) == []
    presence.beat(post, ada)
    assert [entry["name"] for entry in presence.others(post, bob)] == ["Ada Lovelace"]
