"""Statements compiled once (publishing.compiled) run the ORM's SQL and give the ORM's instances and pages."""
import datetime

import pytest
from django.core import signing
from django.db import connection
from django.http import Http404
from django.test import RequestFactory
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from taggit.models import Tag

from blog.factories import AuthorFactory, PostFactory
from blog.models import Post
from blog.views import AUTHOR, BY_AUTHOR, POSTS, TAG, TAGGED
from digests.factories import DigestFactory, TopicFactory
from digests.views import WIRE
from publishing.compiled import Statement, stand_in
from publishing.pagination import CURSOR_SALT, PER_PAGE, Listing, paginate

from .helpers import prepared_statements

NOW = timezone.now()


@pytest.fixture
def archive(db):
    """2½ pages of posts tagged "python", in pairs published at the same time (ties broken by id), by one
    author; one scheduled and one draft post with the same tag and author, which no listing may show."""
    author = AuthorFactory(slug="ada")
    posts = [PostFactory(title=f"Compiled {n:03d}", published_at=NOW - datetime.timedelta(hours=1 + n // 2),
                         authors=[author], tags=["python"])
             for n in range(PER_PAGE * 2 + PER_PAGE // 2)]
    PostFactory(published_at=NOW + datetime.timedelta(days=1), authors=[author], tags=["python"])
    PostFactory(status="draft", published_at=None, authors=[author], tags=["python"])
    return author, Tag.objects.get(slug="python"), posts


def executed(run):
    """The SQL statements (parameters interpolated) `run()` sends, and what it returned."""
    with CaptureQueriesContext(connection) as queries:
        result = run()
    return [query["sql"] for query in queries.captured_queries], result


def same_instances(compiled: list, orm: list) -> None:
    assert [type(row) for row in compiled] == [type(row) for row in orm]
    assert [row.pk for row in compiled] == [row.pk for row in orm]
    for mine, theirs in zip(compiled, orm):
        assert mine.get_deferred_fields() == theirs.get_deferred_fields()
        assert mine.__dict__.keys() == theirs.__dict__.keys()
        for name in mine.__dict__.keys() - {"_state"}:
            assert getattr(mine, name) == getattr(theirs, name), name
        assert (mine._state.db, mine._state.adding) == (theirs._state.db, theirs._state.adding)


@pytest.mark.django_db
def test_a_statement_runs_the_orms_sql_and_gives_its_instances(archive):
    author, tag, _ = archive

    def build(now, tag):
        return Post.objects.published(now).cards().tagged_with(tag)[:PER_PAGE + 1]

    statement = Statement(build, now=Post._meta.get_field("published_at"), tag=Tag._meta.pk)
    compiled_sql, compiled = executed(lambda: statement.fetch(now=NOW, tag=tag.pk))
    orm_sql, orm = executed(lambda: list(build(NOW, tag.pk)))
    assert compiled_sql == orm_sql and len(compiled_sql) == 1
    same_instances(compiled, orm)
    # A second run binds new values into the same statement.
    earlier = NOW - datetime.timedelta(hours=3)
    assert [post.pk for post in statement.fetch(now=earlier, tag=tag.pk)] == [
        post.pk for post in build(earlier, tag.pk)]
    assert statement.fetch(now=NOW, tag=tag.pk + 1000) == []


@pytest.mark.django_db
def test_a_lookup_is_get_object_or_404s(archive):
    author, tag, _ = archive
    sql, found = executed(lambda: TAG.get_or_404(slug="python"))
    orm_sql, orm = executed(lambda: Tag.objects.get(slug="python"))
    assert sql == orm_sql
    same_instances([found], [orm])
    same_instances([AUTHOR.get_or_404(slug="ada")], [author])
    with pytest.raises(Http404):
        TAG.get_or_404(slug="pyth%")
    with pytest.raises(Http404):
        AUTHOR.get_or_404(slug="nobody")


@pytest.mark.django_db
def test_a_lookup_matching_two_rows_is_an_error_not_a_guess(archive):
    PostFactory(title="Twin")
    PostFactory(title="Twin")
    by_title = Statement(lambda title: Post.objects.filter(title=title).order_by()[:21],
                         title=Post._meta.get_field("title"))
    with pytest.raises(Post.MultipleObjectsReturned):
        by_title.get_or_404(title="Twin")


def pages(listing: Listing, queryset, query: dict, **values):
    """The listing's page and paginate()'s for the same request, with the SQL each ran."""
    request = RequestFactory().get("/", query)
    compiled_sql, compiled = executed(lambda: listing.page(request, **values))
    orm_sql, orm = executed(lambda: paginate(request, queryset, listing.per_page, nullable=listing.nullable))
    return (compiled_sql, compiled), (orm_sql, orm)


def cursor_payload(cursor):
    return cursor and signing.loads(cursor, salt=CURSOR_SALT)


def assert_same_page(mine, theirs) -> None:
    (mine_sql, mine_page), (their_sql, their_page) = mine, theirs
    assert mine_sql == their_sql and len(mine_sql) == 1
    same_instances(mine_page.object_list, their_page.object_list)
    assert mine_page.number == their_page.number
    assert cursor_payload(mine_page.next_cursor) == cursor_payload(their_page.next_cursor)
    assert cursor_payload(mine_page.previous_cursor) == cursor_payload(their_page.previous_cursor)


@pytest.mark.django_db
@pytest.mark.parametrize("listing_name", ["posts", "tag", "author"])
def test_a_listing_walks_the_pages_paginate_does(archive, listing_name):
    """Page 1, forward and backward cursors, the last page and ``?page=N`` all match paginate()."""
    author, tag, posts = archive
    listing, values = {
        "posts": (POSTS, {}),
        "tag": (TAGGED, {"tag": tag.pk}),
        "author": (BY_AUTHOR, {"author": author.pk}),
    }[listing_name]
    values["now"] = NOW
    queryset = listing.build(**values)
    mine, theirs = pages(listing, queryset, {}, **values)
    assert_same_page(mine, theirs)
    seen = [post.pk for post in mine[1].object_list]
    while mine[1].has_next:
        forward = mine[1]
        mine, theirs = pages(listing, queryset, {"cursor": forward.next_cursor}, **values)
        assert_same_page(mine, theirs)
        seen += [post.pk for post in mine[1].object_list]
        back = pages(listing, queryset, {"cursor": mine[1].previous_cursor}, **values)
        assert_same_page(*back)
        assert [post.pk for post in back[0][1].object_list] == [post.pk for post in forward.object_list]
    assert seen == [post.pk for post in sorted(posts, key=lambda p: (p.published_at, p.pk), reverse=True)]
    assert_same_page(*pages(listing, queryset, {"page": "2"}, **values))
    for bad in ({"page": "9"}, {"cursor": "nonsense"}):
        with pytest.raises(Http404):
            listing.page(RequestFactory().get("/", bad), **values)


@pytest.mark.django_db
def test_the_wire_pages_by_date_then_time_as_paginate_does():
    """The Wire's sort key starts with a date: its cursors bind a date, then a time and an id."""
    topics = [TopicFactory(), TopicFactory(), TopicFactory()]
    for n in range(PER_PAGE + 5):  # three a day, two of them published at the same time
        DigestFactory(topic=topics[n % 3], date=datetime.date(2026, 3, 1) + datetime.timedelta(days=n // 3),
                      published_at=NOW - datetime.timedelta(hours=n % 2))
    DigestFactory(topic=topics[0], date=datetime.date(2026, 2, 1), status="draft", published_at=None)
    queryset = WIRE.build(now=NOW)
    first = pages(WIRE, queryset, {}, now=NOW)
    assert_same_page(*first)
    second = pages(WIRE, queryset, {"cursor": first[0][1].next_cursor}, now=NOW)
    assert_same_page(*second)
    assert not second[0][1].has_next and len(second[0][1]) == 5
    assert_same_page(*pages(WIRE, queryset, {"cursor": second[0][1].previous_cursor}, now=NOW))


@pytest.mark.django_db
def test_a_listing_reads_the_database_on_every_request(archive):
    """Only the statement is kept: a post published since the last request is on the next page 1."""
    request = RequestFactory().get("/")
    before = POSTS.page(request, now=timezone.now())
    fresh = PostFactory(published_at=timezone.now() - datetime.timedelta(seconds=1))
    after = POSTS.page(request, now=timezone.now())
    assert after.object_list[0].pk == fresh.pk != before.object_list[0].pk


def test_stand_ins_differ_and_unknown_field_types_are_refused():
    published_at = Post._meta.get_field("published_at")
    assert stand_in(published_at) != stand_in(published_at)
    assert stand_in(Tag._meta.pk) != stand_in(Tag._meta.pk)
    with pytest.raises(TypeError):
        stand_in(Post._meta.get_field("posting"))


@pytest.mark.django_db
def test_the_home_pages_lists_are_the_orms(archive):
    from digests.models import Digest
    from reader.views import HOME_DIGEST_CARDS, HOME_DIGESTS, HOME_POST_CARDS, HOME_POSTS

    DigestFactory(published_at=NOW - datetime.timedelta(hours=2))
    DigestFactory(status="draft", published_at=None)
    for statement, orm in [(HOME_POST_CARDS, lambda: list(Post.objects.published(NOW).cards()[:HOME_POSTS])),
                           (HOME_DIGEST_CARDS, lambda: list(Digest.objects.published(NOW).for_cards()[:HOME_DIGESTS]))]:
        compiled_sql, compiled = executed(lambda: statement.fetch(now=NOW))
        orm_sql, expected = executed(orm)
        assert compiled_sql == orm_sql and compiled
        same_instances(compiled, expected)


@pytest.mark.django_db
@pytest.mark.skipif(connection.vendor != "postgresql", reason="prepared statements are PostgreSQL's (psycopg)")
def test_tag_and_author_listings_are_planned_for_each_run_and_the_posts_listing_is_prepared(archive):
    """A tag's or author's best plan depends on how many posts it has, so psycopg must not prepare those
    statements (PostgreSQL could then settle on a generic plan); the unfiltered listing may be prepared."""
    author, tag, _posts = archive
    connection.ensure_connection()
    threshold = connection.connection.prepare_threshold
    assert threshold is not None, "the test settings prepare statements, as production does"
    request = RequestFactory().get("/")

    def run():
        TAGGED.page(request, now=NOW, tag=tag.pk)
        BY_AUTHOR.page(request, now=NOW, author=author.pk)
        POSTS.page(request, now=NOW)

    cards = POSTS.build(now=NOW).query.get_compiler(connection=connection).as_sql()[0].split(" FROM ")[0]
    listings = prepared_statements(run, f"{cards} FROM %")
    assert connection.connection.prepare_threshold == threshold  # restored after each run
    assert listings, "the unfiltered listing is prepared"
    assert not [sql for sql in listings if "blog_taggedpost" in sql or "blog_postauthor" in sql]


@pytest.mark.django_db
@pytest.mark.skipif(connection.vendor != "postgresql", reason="query plans are PostgreSQL's; CI's PostgreSQL pass runs it")
def test_a_repository_page_reads_its_references_from_the_published_index(client, settings):
    """The page's reference listing walks ``reference_published_by_repo`` (this repository's rows
    whose ``first_published_at`` is set), its chart ``mergetally_repository_week`` (the tally, read
    in the repository's own statement) and its citing digests ``digestrepository_published`` in the
    listing's order. Repositories range from a few references to tens of thousands, and this is what
    lets one plan (prepared statements included) suit them all; a ``published()`` the partial index
    cannot serve would show up here as another scan."""
    from digests.factories import DigestReferenceFactory, ReferenceFactory, RepositoryFactory

    settings.PAGE_CACHE_ENABLED = False
    repository = RepositoryFactory(full_name="pytorch/executorch")
    for number in (1, 2):
        DigestReferenceFactory(digest=DigestFactory(), number=number,
                               reference=ReferenceFactory(repository=repository, merged_at=NOW))
    with CaptureQueriesContext(connection) as captured:
        assert client.get(repository.get_absolute_url()).status_code == 200
    sql = [query["sql"] for query in captured.captured_queries]
    listing = [query for query in sql if 'FROM "digests_reference" WHERE' in query]
    chart = [query for query in sql if 'FROM "digests_mergetally"' in query]
    citing = [query for query in sql if 'FROM "digests_digest" INNER JOIN "digests_digestrepository"' in query]
    assert len(listing) == len(chart) == len(citing) == 1
    assert chart[0].startswith('SELECT "digests_repository"."id"'), "the chart comes with the repository"
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # so tiny tables do not hide which index applies
        cursor.execute("SET LOCAL enable_bitmapscan = off")
        cursor.execute("SET LOCAL enable_sort = off")
        for query, index in [(listing[0], "reference_published_by_repo"), (chart[0], "mergetally_repository_week"),
                             (citing[0], "digestrepository_published")]:
            cursor.execute(f"EXPLAIN {query}")
            plan = "\n".join(row[0] for row in cursor.fetchall())
            assert index in plan, plan
            assert "digests_digestreference" not in plan, plan  # no join through the citations
            assert "Sort" not in plan.replace("Sort Key", ""), plan  # read in order, stopped at the page


@pytest.mark.django_db
@pytest.mark.parametrize("zone", ["UTC", "America/Los_Angeles"])
def test_a_values_list_statement_gives_the_orm_rows_in_each_time_zone(zone):
    """The repository chart's weekly counts (``TruncWeek`` in the current zone, ``Count``) compiled
    once: the same rows as the ORM's, and a zone of its own -- the zone is part of the SQL."""
    from digests.factories import DigestReferenceFactory, ReferenceFactory, RepositoryFactory
    from digests.models import Reference
    from digests.views import WEEKLY_MERGES

    repository = RepositoryFactory()
    for hours in range(0, 24 * 40, 7):  # a merge every 7 hours for 40 days, week edges in both zones
        DigestReferenceFactory(digest=DigestFactory(), number=1, reference=ReferenceFactory(
            repository=repository, merged_at=NOW - datetime.timedelta(hours=hours)))
    since = NOW - datetime.timedelta(days=30)
    with timezone.override(zone):
        orm = sorted(Reference.objects.published(NOW).filter(repository=repository).merged_weeks(since))
        compiled = sorted(WEEKLY_MERGES.fetch(now=NOW, repository=repository.pk, since=since))
    assert compiled == orm
    assert all(isinstance(week, datetime.date) for week, _count in compiled) and sum(n for _w, n in orm) > 90


@pytest.mark.django_db
@pytest.mark.skipif(connection.vendor != "postgresql", reason="width_bucket is PostgreSQL's; SQLite charts by TruncWeek")
@pytest.mark.parametrize("zone", ["UTC", "America/Los_Angeles", "Australia/Lord_Howe"])
def test_the_weekly_buckets_are_the_orms_weeks_in_each_time_zone(zone):
    """The chart's counts by ``width_bucket`` over week edges made in Python: the weeks ``TruncWeek``
    gives, in zones whose weeks cross daylight-saving changes (Lord Howe's by half an hour), merges
    on each side of every edge; merges after the last week are left out, as ``every_week`` leaves them."""
    from digests.factories import DigestReferenceFactory, ReferenceFactory, RepositoryFactory
    from digests.models import Reference
    from digests.models.references import bucket_weeks, timestamp_array, week_bounds
    from digests.views import WEEKLY_BUCKETS

    repository = RepositoryFactory()
    now = datetime.datetime(2026, 11, 4, 12, tzinfo=datetime.UTC)  # weeks around 2026-11-01 and 2026-10-04
    with timezone.override(zone):
        first_monday = timezone.localdate(now) - datetime.timedelta(days=timezone.localdate(now).weekday(), weeks=9)
        bounds = week_bounds(first_monday, 10)
        merges = [edge + datetime.timedelta(minutes=shift) for edge in bounds for shift in (-31, -1, 0, 29, 61)]
    digest = DigestFactory(published_at=now - datetime.timedelta(days=100))
    for number, merged_at in enumerate(merges, start=1):
        DigestReferenceFactory(digest=digest, number=number,
                               reference=ReferenceFactory(repository=repository, merged_at=merged_at))
    later = now + datetime.timedelta(days=30)  # every merge is in the past
    with timezone.override(zone):
        published = Reference.objects.published(later).filter(repository=repository)
        orm = {week: merged for week, merged in published.merged_weeks(bounds[0])
               if first_monday <= week < first_monday + datetime.timedelta(weeks=10)}
        rows = WEEKLY_BUCKETS.fetch(now=later, repository=repository.pk, since=bounds[0],
                                    bounds=timestamp_array(bounds))
        by_bucket = dict(bucket_weeks(rows, first_monday, 10))
        same_query = dict(bucket_weeks(published.merged_in_weeks(bounds[0], timestamp_array(bounds)), first_monday, 10))
    assert by_bucket == orm == same_query
    # 11 edges x 5 merges, less the two before the first edge and the three from the last edge on
    assert sum(orm.values()) == 11 * 5 - 2 - 3 and len(orm) == 10


@pytest.mark.django_db
@pytest.mark.parametrize("zone", ["UTC", "America/Los_Angeles"])
def test_the_repository_chart_is_merged_per_week_on_every_database(zone):
    """The page's chart is the ORM's ``merged_per_week``, a scheduled digest's references left out
    until their minute: read with the repository from PostgreSQL's tally in UTC, counted live by
    ``weekly_merges`` (``width_bucket`` on PostgreSQL, ``TruncWeek`` on SQLite) elsewhere."""
    from digests.factories import DigestReferenceFactory, ReferenceFactory, RepositoryFactory
    from digests.models import Reference
    from digests.models.tallies import tallied_here
    from digests.views import CHART_WEEKS, _repository_and_weeks, weekly_merges

    repository = RepositoryFactory()
    now = timezone.now()
    published = DigestFactory(published_at=now - datetime.timedelta(days=1))
    scheduled = DigestFactory(published_at=now + datetime.timedelta(hours=1))
    for number, days in enumerate(range(0, 24 * 7, 5), start=1):
        DigestReferenceFactory(digest=scheduled if number % 4 == 0 else published, number=number, reference=(
            ReferenceFactory(repository=repository, merged_at=now - datetime.timedelta(days=days, hours=number))))
    with timezone.override(zone), CaptureQueriesContext(connection) as captured:
        expected = Reference.objects.published(now).filter(repository=repository).merged_per_week(CHART_WEEKS)
        reads = len(captured)
        shown, chart = _repository_and_weeks(now, repository.full_name)
        reads = len(captured) - reads
        live = weekly_merges(repository.pk, now)
        tallied = tallied_here()
    assert shown == repository and chart == live == expected and len(chart) == CHART_WEEKS
    assert reads == (1 if tallied else 2) and tallied == (connection.vendor == "postgresql" and zone == "UTC")
    assert 0 < sum(count for _week, count in chart) < len(range(0, 24 * 7, 5))


@pytest.mark.django_db
@pytest.mark.parametrize("with_topic", [True, False])
def test_a_statement_with_select_related_gives_the_orms_instances_and_their_parents(with_topic):
    """``select_related`` in a compiled statement: one query, the row and its parent (or None) as the ORM
    builds them -- the repository page's lookup."""
    from digests.factories import RepositoryFactory
    from digests.models import Repository

    repository = RepositoryFactory(topic=TopicFactory() if with_topic else None)
    statement = Statement(lambda name: Repository.objects.filter(full_name__iexact=name).select_related("topic")
                          .order_by()[:21], name=Repository._meta.get_field("full_name"))
    orm = list(Repository.objects.filter(full_name__iexact=repository.full_name.upper()).select_related("topic")[:21])
    statement.fetch(name="warm/up")  # compiled outside the count
    sql, compiled = executed(lambda: statement.fetch(name=repository.full_name.upper()))
    assert len(sql) == 1 and "JOIN" in sql[0]
    same_instances(compiled, orm)
    assert compiled[0].topic == orm[0].topic and (compiled[0].topic is None) is not with_topic
    if with_topic:
        same_instances([compiled[0].topic], [orm[0].topic])
        with CaptureQueriesContext(connection) as more:
            assert compiled[0].topic.name == repository.topic.name
        assert not more.captured_queries


@pytest.mark.django_db
def test_a_statement_with_annotations_sets_them_as_the_orm_does():
    """Annotations on instances, beside ``select_related``: each instance carries the subquery's value
    (and the parent still comes from its own columns, after the annotation's) -- what the repository
    page's statement adds its chart with."""
    from django.db.models import Count, OuterRef, Subquery

    from digests.factories import DigestReferenceFactory, ReferenceFactory, RepositoryFactory
    from digests.models import Reference, Repository

    repository = RepositoryFactory(topic=TopicFactory())
    for number in (1, 2, 3):
        DigestReferenceFactory(digest=DigestFactory(), number=number,
                               reference=ReferenceFactory(repository=repository, merged_at=NOW))

    def build(name):
        merged = (Reference.objects.filter(repository=OuterRef("pk"), merged_at__isnull=False).order_by()
                  .values("repository").annotate(n=Count("pk")).values("n"))
        return (Repository.objects.filter(full_name__iexact=name).select_related("topic").order_by()
                .annotate(merged=Subquery(merged)))[:21]

    statement = Statement(build, name=Repository._meta.get_field("full_name"))
    orm = list(build(repository.full_name))
    statement.fetch(name="warm/up")
    sql, compiled = executed(lambda: statement.fetch(name=repository.full_name))
    assert len(sql) == 1
    same_instances(compiled, orm)
    assert compiled[0].merged == orm[0].merged == 3
    assert compiled[0].topic.name == orm[0].topic.name == repository.topic.name


@pytest.mark.django_db
def test_a_listing_of_named_rows_walks_the_pages_paginate_does():
    """The repository page's references are named tuples (``values_list(named=True)``): page 1, every
    cursor forward and back, and ``?page=2`` are paginate()'s rows, of the ORM's own row class. Its sort
    keys may be NULL (issues are never merged, a seed's commit has no opening date) wherever a page
    boundary falls: every row is seen once, in the database's order, and each page back is the page before."""
    from digests.factories import DigestReferenceFactory, ReferenceFactory, RepositoryFactory
    from digests.views import REPOSITORY_REFERENCES

    repository = RepositoryFactory()
    digest = DigestFactory(published_at=NOW - datetime.timedelta(days=1))
    for number in range(1, PER_PAGE * 3 + 6):  # merged in pairs at the same moment: ties broken by id
        moment = NOW - datetime.timedelta(hours=number // 2)
        DigestReferenceFactory(digest=digest, number=number, reference=ReferenceFactory(
            repository=repository, merged_at=None if number % 3 == 0 else moment,
            opened_at=None if number % 5 < 2 else moment - datetime.timedelta(days=number % 4)))
    ReferenceFactory(repository=repository)  # never cited: never listed
    values = {"now": NOW, "repository": repository.pk}
    queryset = REPOSITORY_REFERENCES.build(**values)

    def same_rows(mine, theirs):
        (mine_sql, mine_page), (their_sql, their_page) = mine, theirs
        assert mine_sql == their_sql and len(mine_sql) == 1
        assert mine_page.object_list == their_page.object_list
        assert [type(row) for row in mine_page] == [type(row) for row in their_page]
        assert cursor_payload(mine_page.next_cursor) == cursor_payload(their_page.next_cursor)
        assert cursor_payload(mine_page.previous_cursor) == cursor_payload(their_page.previous_cursor)

    mine, theirs = pages(REPOSITORY_REFERENCES, queryset, {}, **values)
    same_rows(mine, theirs)
    seen = [row.id for row in mine[1]]
    assert mine[1].object_list[0]._fields == ("kind", "title", "number", "url", "merged_at", "opened_at", "id")
    cursors_with_null = 0
    while mine[1].has_next:
        before = mine[1]
        cursors_with_null += None in cursor_payload(before.next_cursor)[2]
        mine, theirs = pages(REPOSITORY_REFERENCES, queryset, {"cursor": before.next_cursor}, **values)
        same_rows(mine, theirs)
        seen += [row.id for row in mine[1]]
        back = pages(REPOSITORY_REFERENCES, queryset, {"cursor": mine[1].previous_cursor}, **values)
        same_rows(*back)
        assert back[0][1].object_list == before.object_list
    assert seen == list(queryset.values_list("id", flat=True))
    assert len(seen) == len(set(seen)) == PER_PAGE * 3 + 5
    assert cursors_with_null  # a page boundary fell on a NULL
    same_rows(*pages(REPOSITORY_REFERENCES, queryset, {"page": "2"}, **values))
