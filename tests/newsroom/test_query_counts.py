"""The newsroom runs the same number of queries for 3 items a section as for 30, for every role."""
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from .conftest import populate

pytestmark = pytest.mark.django_db


def queries_for(client) -> tuple[int, bytes]:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(reverse("admin:index"))
    assert response.status_code == 200
    return len(queries), response.content


@pytest.mark.parametrize("role", ["editor", "publisher", "superuser"])
def test_the_page_costs_the_same_for_3_items_a_section_and_for_30(client, roles, role, make_staff_user):
    user, submitter = roles[role], make_staff_user("submitter", "Editors")
    client.force_login(user)
    populate(3, user, submitter)
    few, page = queries_for(client)
    assert page.count(b"/change/") >= 3  # rows are there to cost something
    populate(27, user, submitter)
    many, page = queries_for(client)
    assert page.count(b"/change/") > 3 * 3
    assert many == few
    assert few <= 12, few


def test_each_section_is_one_statement(client, superuser, make_staff_user):
    """Session, user, time zone, then one statement per section (a superuser has every permission in Python)."""
    client.force_login(superuser)
    populate(3, superuser, make_staff_user("submitter", "Editors"))
    with CaptureQueriesContext(connection) as queries:
        client.get(reverse("admin:index"))
    statements = [query["sql"] for query in queries.captured_queries]
    assert len(statements) == 2 + 1 + 6, statements  # review, next, yours, drafted, newsletters, attention
    assert sum("UNION ALL" in sql for sql in statements) == 3
