"""The admin at the archive's size (issue 26), signed in as a superuser.

Each large list (posts, digests, references, webhook deliveries), its search, a filtered
list and the change form of a digest with many citations cost the same number of
queries at N rows as at 3N; searches go through indexes and find the right rows; the
counts are the planner's estimate on PostgreSQL when the true count would be large.
"""
import contextlib
import time
import uuid

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext

from blog.factories import AuthorFactory, PostFactory
from blog.models import Post
from digests.factories import DigestFactory, DigestReferenceFactory, ReferenceFactory, RepositoryFactory
from digests.models import Digest, Reference
from ingestion.models import WebhookDelivery
from publishing import changelists
from publishing.changelists import EstimatedCountPaginator, estimated_count

from .test_admin import url

pytestmark = pytest.mark.django_db

#: Session, user, its permissions and the list's own statements: well under the bench's bound.
MAX_QUERIES = 14
ON_POSTGRESQL = pytest.mark.skipif(connection.vendor != "postgresql",
                                   reason="estimated counts read PostgreSQL's planner; SQLite always counts exactly")


@pytest.fixture
def superuser(client):
    user = get_user_model().objects.create_superuser("root", "root@example.com", "x")
    client.force_login(user)
    return user


def make_posts(count: int) -> None:
    author = AuthorFactory(handle="ada")
    for n in range(count):
        PostFactory(title=f"Post {n} about the allocator", authors=[author, AuthorFactory()], tags=[f"t{n}", "common"])


def make_digests(count: int) -> None:
    repository = RepositoryFactory(full_name="pytorch/pytorch")
    for n in range(count):
        digest = DigestFactory(headline=f"The allocator, day {n}")
        for number in (1, 2):
            DigestReferenceFactory(digest=digest, number=number, reference=ReferenceFactory(repository=repository))


def make_references(count: int) -> None:
    repository = RepositoryFactory()
    for n in range(count):
        ReferenceFactory(repository=repository, title=f"Fix the allocator ({n})", state="merged")


def make_deliveries(count: int) -> None:
    WebhookDelivery.objects.bulk_create(
        WebhookDelivery(guid=str(uuid.uuid4()), event="pull_request", action="opened", body=b"{}",
                        repository_full_name="pytorch/pytorch", detail="an allocator fix")
        for _ in range(count))


def queries(client, address: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(address)
    assert response.status_code == 200, address
    return len(captured)


LISTS = [
    (Post, make_posts, ["", "?q=allocator", "?status__exact=published", "?q=ada"]),
    (Digest, make_digests, ["", "?q=allocator", "?status__exact=published", "?references__repository__id__exact=1"]),
    (Reference, make_references, ["", "?q=fix", "?state__exact=merged", "?kind__exact=pull_request"]),
    (WebhookDelivery, make_deliveries, ["", "?q=pytorch/pytorch", "?state__exact=pending", "?event__exact=push"]),
]


@pytest.mark.parametrize(("model", "make", "suffixes"), LISTS, ids=[m.__name__ for m, _, _ in LISTS])
def test_lists_cost_a_fixed_number_of_queries(client, superuser, model, make, suffixes):
    make(3)
    base = url(model, "changelist")
    few = [queries(client, base + suffix) for suffix in suffixes]
    make(6)
    many = [queries(client, base + suffix) for suffix in suffixes]
    assert few == many
    assert max(many) <= MAX_QUERIES


def test_digest_change_form_costs_the_same_for_many_citations(client, superuser):
    def digest_with(citations: int) -> Digest:
        digest = DigestFactory()
        for number in range(1, citations + 1):
            DigestReferenceFactory(digest=digest, number=number)
        return digest

    few, many = digest_with(3), digest_with(30)
    assert queries(client, url(Digest, "change", few.pk)) == queries(client, url(Digest, "change", many.pk))
    assert queries(client, url(Digest, "change", many.pk)) <= 40  # fixed: sections, inlines, revisions, pickers


def found(client, model, term: str) -> set[int]:
    response = client.get(url(model, "changelist"), {"q": term})
    assert response.status_code == 200
    return {obj.pk for obj in response.context["cl"].result_list}


def test_reference_search_uses_words_keys_logins_and_sha_prefixes(client, superuser):
    repository = RepositoryFactory(full_name="pytorch/ignite")
    fix = ReferenceFactory(title="Fix the caching allocator", number=4242, key="4242", author_login="ezyang")
    commit = ReferenceFactory(kind=Reference.Kind.COMMIT, title="Bump version", key="abcdef1234" + "0" * 30,
                              sha="abcdef1234" + "0" * 30, repository=repository)
    prefix = ReferenceFactory(title="Prefixes are not words")
    assert found(client, Reference, "fix") == {fix.pk}
    assert found(client, Reference, "allocators") == {fix.pk}  # stemmed, as the site search
    assert found(client, Reference, "pre") == set()  # no substring of a word
    assert found(client, Reference, "4242") == {fix.pk}
    assert found(client, Reference, "#4242") == {fix.pk}
    assert found(client, Reference, "ezyang") == {fix.pk}
    assert found(client, Reference, "abcdef12") == {commit.pk}
    assert found(client, Reference, "pytorch/ignite") == {commit.pk}
    assert prefix.pk not in found(client, Reference, "bump")


def test_post_and_digest_search_use_the_full_text_index(client, superuser):
    post = PostFactory(title="The allocator, explained", slug="allocator-explained")
    other = PostFactory(title="Reallocation strategies", body="Nothing here.", excerpt="Nothing.")
    assert found(client, Post, "allocator") == {post.pk}
    assert other.pk not in found(client, Post, "alloc")
    assert found(client, Post, "allocator-explained") == {post.pk}  # the exact slug
    digest = DigestFactory(headline="Graph breaks, fewer", summary="Dynamo improved.", body="")
    DigestFactory(headline="Unrelated", summary="Breakfast news.", body="")
    assert found(client, Digest, "graph") == {digest.pk}
    assert found(client, Digest, digest.slug) == {digest.pk}


def test_delivery_search_is_exact(client, superuser):
    make_deliveries(2)
    delivery = WebhookDelivery.objects.create(guid="72d3162e-cc78-11e3-81ab-4c9367dc0958", event="push",
                                              body=b"{}", repository_full_name="pytorch/vision")
    assert found(client, WebhookDelivery, delivery.guid) == {delivery.pk}
    assert found(client, WebhookDelivery, "pytorch/vision") == {delivery.pk}
    assert found(client, WebhookDelivery, "vision") == set()  # no substring scan
    assert found(client, WebhookDelivery, "push") == {delivery.pk}


def test_autocomplete_filter_shows_the_chosen_object_only(client, superuser):
    ada = AuthorFactory(name="Ada Lovelace", handle="ada")
    AuthorFactory(name="Not Listed", handle="unlisted")
    mine = PostFactory(authors=[ada])
    PostFactory()
    page = client.get(url(Post, "changelist")).content.decode()
    assert 'class="autocomplete-filter"' in page and "admin/js/autocomplete_filter.js" in page
    assert "Not Listed" not in page  # the filter lists no authors
    response = client.get(url(Post, "changelist"), {"authors__id__exact": ada.pk})
    assert {obj.pk for obj in response.context["cl"].result_list} == {mine.pk}
    assert "Ada Lovelace (@ada)" in response.content.decode()  # the chosen author, in the widget
    assert client.get(url(Post, "changelist"), {"authors__id__exact": "x"}).status_code == 302  # ?e=1


def test_counts_are_exact_on_sqlite_and_small_tables(client, superuser):
    make_references(3)
    if connection.vendor == "postgresql":  # statistics of this table now, not those other tests' rows left
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE digests_reference")
    paginator = client.get(url(Reference, "changelist")).context["cl"].paginator
    assert isinstance(paginator, EstimatedCountPaginator)
    assert paginator.count == 3 and not paginator.estimated


def analyse(table: str) -> None:
    """What autovacuum leaves behind: this backend's counts reported, then ANALYZE (outside a transaction:
    an ANALYZE inside one leaves the statistics without that transaction's rows, uncommitted to others)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_force_next_flush()")  # reported as the statement ends
        cursor.execute(f"ANALYZE {table}")


@contextlib.contextmanager
def no_autovacuum(table: str):
    """Autovacuum may not analyse `table` meanwhile, so what is tested is what happens before it does."""
    with connection.cursor() as cursor:
        cursor.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = false)")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"ALTER TABLE {table} RESET (autovacuum_enabled)")


def many_references(count: int, first: int = 0) -> None:
    repository = RepositoryFactory()
    Reference.objects.bulk_create(ReferenceFactory.build(repository=repository, number=n, key=str(n))
                                  for n in range(first, first + count))


def reference_statistics() -> tuple:
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples, pg_stat_get_last_analyze_time(oid), pg_stat_get_last_autoanalyze_time(oid) "
                       "FROM pg_class WHERE oid = 'digests_reference'::regclass")
        return cursor.fetchone()


@ON_POSTGRESQL
@pytest.mark.django_db(transaction=True)
def test_counts_are_the_planners_estimate_on_postgresql(client, superuser, monkeypatch):
    make_references(30)
    analyse("digests_reference")
    assert estimated_count(Reference.objects.all(), 1) == (30, True)  # the statistics' live rows, just analysed
    assert estimated_count(Reference.objects.filter(state="merged"), 1)[0] > 0  # EXPLAIN's estimate
    assert estimated_count(Reference.objects.filter(state="merged"), 10_000) == (
        Reference.objects.filter(state="merged").count(), False)  # small: counted exactly
    monkeypatch.setattr(changelists, "EXACT_BELOW", 1)
    response = client.get(url(Reference, "changelist"))
    paginator = response.context["cl"].paginator
    assert paginator.estimated and paginator.count == 30
    filtered = client.get(url(Reference, "changelist"), {"state__exact": "merged"}).context["cl"].paginator
    assert filtered.estimated
    with CaptureQueriesContext(connection) as captured:
        client.get(url(Reference, "changelist"))
    assert not any(query["sql"].upper().startswith("SELECT COUNT(") for query in captured)  # no exact count


@ON_POSTGRESQL
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("params", [{}, {"state__exact": "merged"}, {"q": "fix"}], ids=["all", "filtered", "search"])
def test_a_list_runs_as_many_queries_counted_exactly_as_estimated(client, superuser, monkeypatch, params):
    """Below ``EXACT_BELOW`` the count is exact, above it estimated: one statement either way, so
    ``make bench``'s admin lists run the same queries at a tenth of the archive as at its full size."""
    make_references(30)
    analyse("digests_reference")

    def run() -> tuple[int, bool]:
        with CaptureQueriesContext(connection) as captured:
            response = client.get(url(Reference, "changelist"), params)
        assert response.status_code == 200
        return len(captured), response.context["cl"].paginator.estimated

    exact_queries, estimated = run()
    assert not estimated
    monkeypatch.setattr(changelists, "EXACT_BELOW", 1)
    estimated_queries, estimated = run()
    assert estimated and estimated_queries == exact_queries


@ON_POSTGRESQL
def test_the_installed_count_function_is_the_one_the_code_expects():
    """The migration installs a frozen copy of ``COUNT_FUNCTION_BODY``: a change to one needs a migration."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT prosrc FROM pg_proc WHERE proname = %s", [changelists.COUNT_FUNCTION])
        installed = [row[0] for row in cursor.fetchall()]
    assert installed == [changelists.COUNT_FUNCTION_BODY]


@ON_POSTGRESQL
@pytest.mark.django_db(transaction=True)
def test_the_count_follows_a_mass_delete_without_an_analyze(client, editor, monkeypatch):
    """An Editor's list of references, 2,000 rows analysed, then 90% deleted: the count follows within
    seconds, though nothing analyses the table (``pg_class.reltuples`` still says 2,000)."""
    monkeypatch.setattr(changelists, "EXACT_BELOW", 100)  # 200 rows left are still estimated, not counted
    client.force_login(editor)

    def listed() -> tuple[int, bool]:
        paginator = client.get(url(Reference, "changelist")).context["cl"].paginator
        return paginator.count, paginator.estimated

    with no_autovacuum("digests_reference"):
        many_references(2000)
        analyse("digests_reference")
        assert listed() == (2000, True)
        analysed = reference_statistics()
        Reference.objects.filter(number__gte=200).delete()  # committed: the test is not a transaction
        deadline = time.monotonic() + 15  # the deleting backend reports within ten seconds of going idle
        while listed()[0] == 2000 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert listed() == (200, True) == (Reference.objects.count(), True)
        assert reference_statistics() == analysed  # no ANALYZE ran: reltuples is still 2,000


@ON_POSTGRESQL
@pytest.mark.django_db(transaction=True)
def test_without_statistics_the_count_scales_the_last_analyse_to_the_pages_now():
    """Statistics reset (or a crash, or a standby): the planner's estimate, reltuples per page times the
    pages now, follows a table that doubled since it was analysed."""
    with no_autovacuum("digests_reference"):
        many_references(2000)
        analyse("digests_reference")
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_stat_reset_single_table_counters('digests_reference'::regclass)")
        many_references(2000, first=2000)
        total, estimated = estimated_count(Reference.objects.all(), 100)
        assert estimated and abs(total - 4000) <= 4000 * 0.05, total
        assert reference_statistics()[0] == 2000  # last analysed at half the size
