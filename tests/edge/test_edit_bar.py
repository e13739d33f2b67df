"""The edit bar through the real edge (tests/edge/conftest.py): a staff visit never reaches a cache,
and *Purge from the edge* purges the page there (issue 26).

Staff sign in through the admin's login form (``staff_session``), so their requests carry the
session cookie as a browser's would.
"""
import re

import pytest

from blog.factories import PostFactory

from .conftest import wait_for
from .test_edge import VISIBLE_WITHIN, committed, staff_session, unique, user_model  # noqa: F401 (autouse fixture)

BAR = '<aside class="editbar" id="editbar"'
#: What differs between two answers of one page whoever asked: when (Date, Age), whether the edge had it
#: (X-Cache), and Last-Modified (the second the page cache's current version was minted).
VOLATILE = {"date", "age", "x-cache", "last-modified"}


def reader_answer(response) -> tuple[int, bytes, dict]:
    """Status, body and headers; the policy's directives as a set: django-csp 4.0 joins them in the order
    of a Python set (``csp.utils.build_policy``), which differs between processes, staff or not."""
    headers = {name.lower(): value for name, value in response.headers.items() if name.lower() not in VOLATILE}
    headers["content-security-policy"] = set(headers["content-security-policy"].split("; "))
    return response.status_code, response.content, headers


@pytest.fixture
def staff_cookie(edge):
    return staff_session(edge, user_model().objects.create_superuser(unique("chief"), password="pw"))


def test_a_staff_visit_leaves_the_readers_answer_byte_identical_at_the_edge(edge, staff_cookie):
    """Two addresses of one page (a query string nothing on the page echoes): staff open one first;
    a reader then gets, from the edge, the same bytes and headers as at the address staff never opened."""
    post = PostFactory(slug=unique("staffview"), title="Seen by staff first")
    unseen, seen = f"/posts/{post.slug}/?by=readers", f"/posts/{post.slug}/?by=staff"
    debug = {"X-Edge-Debug": "1"}  # from the purgers' address: the edge shows the app's Surrogate-Key
    with edge.client() as reader, edge.client(cookies={"sessionid": staff_cookie}) as staff:
        never_seen_by_staff = reader.get(unseen)
        for _ in range(2):
            bar = staff.get(seen, headers=debug)
            assert bar.status_code == 200 and BAR in bar.text and bar.headers["X-Cache"] == "MISS"
            assert bar.headers["Cache-Control"] == "private, no-store" and "Surrogate-Key" not in bar.headers
        after_staff = reader.get(seen, headers=debug)
        again = reader.get(seen)
        staff_again = staff.get(seen)  # the reader's copy is at the edge now: staff still pass
        last = reader.get(seen)
    assert f"post-{post.pk}" in after_staff.headers["Surrogate-Key"].split()  # the debug header works
    assert (after_staff.headers["X-Cache"], after_staff.headers["X-Page-Cache"]) == ("MISS", "miss")  # nothing kept
    assert (again.headers["X-Cache"], last.headers["X-Cache"]) == ("HIT", "HIT")
    assert BAR in staff_again.text and BAR not in after_staff.text
    expected = reader_answer(never_seen_by_staff)
    for response in (again, last):
        status, body, headers = reader_answer(response)
        assert (status, body) == expected[:2]
        assert headers == expected[2]


def test_the_purge_button_purges_the_page_at_the_edge(edge, staff_cookie):
    post = PostFactory(slug=unique("purged"), title="Purged by hand")
    url = f"/posts/{post.slug}/"
    with edge.client() as reader, edge.client(cookies={"sessionid": staff_cookie}) as staff:
        for _ in range(2):
            warm = reader.get(url)
        assert warm.headers["X-Cache"] == "HIT"
        page = staff.get(url).text  # sets the CSRF cookie, as a browser would keep it
        action = re.search(r'<form method="post" action="([^"]+)" class="editbar-purge">', page).group(1)
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
        assert staff.get(action).status_code == 405  # a GET purges nothing...
        assert reader.get(url).headers["X-Cache"] == "HIT"
        refused = staff.post(action, data={"next": url})  # ...nor a POST without the token
        assert refused.status_code == 403 and reader.get(url).headers["X-Cache"] == "HIT"
        purged = staff.post(action, data={"csrfmiddlewaretoken": token, "next": url})
        assert purged.status_code == 302 and purged.headers["Location"] == url
        assert wait_for(lambda: reader.get(url).headers["X-Cache"] == "MISS", VISIBLE_WITHIN), \
            "the purge never reached the edge"
        assert "Purge of" in staff.get(url).text  # the message, in the bar of the page it returned to
