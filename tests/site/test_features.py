"""Repository chart, related posts, reading time, highlighted code, previous/next digests, filters, pagination."""
import datetime
import html
import re
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import timezone

from blog.factories import PostFactory
from digests.factories import DigestFactory, DigestReferenceFactory, ReferenceFactory, TopicFactory
from digests.models import Reference

from .conftest import make_digest
from .helpers import visible_text


@pytest.mark.django_db
def test_merged_per_week_counts_published_references_in_the_last_26_weeks(site):
    today = datetime.date(2026, 6, 17)  # a Wednesday
    repository = site.repositories[1]
    digest = site.digests[0]
    at = lambda day: timezone.make_aware(datetime.datetime.combine(day, datetime.time(9)))  # noqa: E731
    for number, day in enumerate([today, today - datetime.timedelta(days=2), datetime.date(2026, 6, 1),
                                  today - datetime.timedelta(weeks=30)], start=10):
        DigestReferenceFactory(digest=digest, number=number,
                               reference=ReferenceFactory(repository=repository, merged_at=at(day)))
    DigestReferenceFactory(digest=site.hidden_digests["draft"], number=10,
                           reference=ReferenceFactory(repository=repository, merged_at=at(today)))
    weeks = Reference.objects.published().filter(repository=repository).merged_per_week(26, today=today)
    assert len(weeks) == 26
    assert weeks[0][0] == datetime.date(2025, 12, 22) and weeks[-1][0] == datetime.date(2026, 6, 15)
    assert all(week.weekday() == 0 for week, _count in weeks)
    counts = dict(weeks)
    assert counts[datetime.date(2026, 6, 15)] == 2  # today and Monday; the draft's reference is not counted
    assert counts[datetime.date(2026, 6, 1)] == 1
    assert sum(counts.values()) == 3  # 30 weeks ago is outside the window


@pytest.mark.django_db
def test_repository_page_draws_26_weekly_bars_scaled_to_the_busiest_week(client, site):
    html = client.get("/repos/pytorch/pytorch/").content.decode()
    bars = re.findall(r'<rect x="[\d.]+" y="([\d.]+)" width="[\d.]+" height="([\d.]+)" class="bar">', html)
    assert len(bars) == 26
    heights = [float(height) for _y, height in bars]
    assert max(heights) == pytest.approx(100.0)  # the factories merge everything "now": one full bar
    assert sorted(heights)[:-1] == [0.0] * 25
    text = visible_text(html)
    assert "3 merged items cited over the last 26 weeks" in html
    assert "Published headline 0 change 2" in text  # its references are listed
    assert "Digests citing pytorch/pytorch" in text and "Published headline 2" in text


@pytest.mark.django_db
def test_related_posts_share_tags_and_rank_by_how_many(client, site):
    post = PostFactory(title="Subject", tags=["cuda", "rl", "memory"])
    two = PostFactory(title="Shares two", tags=["cuda", "rl"])
    PostFactory(title="Shares none", tags=["other"])
    text = visible_text(client.get(post.get_absolute_url()).content.decode())
    related = text[text.index("Related posts"):]
    assert related.index("Shares two") < related.index("Eager CUDA memory") or related.index(
        "RL with torch.compile") < related.index("Eager CUDA memory")
    assert "Shares none" not in related and "Secret" not in related and "Subject Subject" not in related
    assert two.title in related


@pytest.mark.django_db
def test_reading_time_rounds_at_230_words_a_minute(client, site):
    long_post = PostFactory(body=" ".join(["word"] * 1150))
    assert long_post.reading_time == 5
    assert "5 min read" in client.get(long_post.get_absolute_url()).content.decode()
    assert site.posts[0].reading_time == 1


@pytest.mark.django_db
def test_code_is_highlighted_and_styled_locally(client, site):
    html = client.get(site.posts[1].get_absolute_url()).content.decode()
    assert '<pre><code class="language-python"><span class="n">x</span> <span class="o">=</span>' in html
    css = (Path(settings.BASE_DIR) / "static" / "css" / "site.css").read_text()
    for token_class in ("k", "o", "s", "c1", "mi", "nf"):
        assert f"pre code .{token_class} " in css
    assert "http" not in re.sub(r"/\*.*?\*/", "", css, flags=re.S)  # nothing fetched from elsewhere


@pytest.mark.django_db
def test_previous_and_next_digest_are_of_the_same_topic_and_published(client, site):
    other = TopicFactory(name="Other", slug="other")
    DigestFactory(topic=other, date=datetime.date(2026, 6, 11), headline="Other topic, in between")
    text = visible_text(client.get(site.digests[1].get_absolute_url()).content.decode())
    assert "← Previous PyTorch digest Published headline 0" in text
    assert "Next PyTorch digest → Published headline 2" in text
    assert "Other topic" not in text
    last = visible_text(client.get(site.digests[2].get_absolute_url()).content.decode())
    assert "Next PyTorch digest" not in last


@pytest.mark.django_db
def test_neighbours_are_the_nearest_live_digests_of_the_topic_in_one_query(django_assert_num_queries):
    from publishing.workflow import Status

    topic, other = TopicFactory(name="Near", slug="near"), TopicFactory(name="Far", slug="far")
    day = datetime.date(2026, 6, 10)
    digest = DigestFactory(topic=topic, date=day)
    DigestFactory(topic=topic, date=day - datetime.timedelta(days=5), headline="Older")
    previous = DigestFactory(topic=topic, date=day - datetime.timedelta(days=2), headline="Nearest before")
    DigestFactory(topic=topic, date=day - datetime.timedelta(days=1), status=Status.DRAFT)
    DigestFactory(topic=other, date=day + datetime.timedelta(days=1))
    DigestFactory(topic=topic, date=day + datetime.timedelta(days=1),
                  published_at=timezone.now() + datetime.timedelta(days=1))  # scheduled, not live yet
    following = DigestFactory(topic=topic, date=day + datetime.timedelta(days=3), headline="Nearest after")
    with django_assert_num_queries(1):
        found = digest.neighbours()
    assert [d.pk for d in found] == [previous.pk, following.pk]
    assert found[0].get_absolute_url() == previous.get_absolute_url() and found[1].headline == "Nearest after"
    assert following.neighbours()[1] is None


@pytest.mark.django_db
def test_wire_topic_choices_are_the_published_topics_by_name(django_assert_num_queries):
    from digests.models import Topic
    from publishing.workflow import Status

    for name, status, hours in [("Zeta", Status.PUBLISHED, -1), ("Alpha", Status.PUBLISHED, -1),
                                ("Drafted", Status.DRAFT, -1), ("Scheduled", Status.PUBLISHED, 24)]:
        DigestFactory(topic=TopicFactory(name=name, slug=name.lower()),
                      status=status, published_at=timezone.now() + datetime.timedelta(hours=hours))
    TopicFactory(name="Empty", slug="empty")
    with django_assert_num_queries(1):
        choices = Topic.objects.published_choices()
    assert [(t.name, t.slug) for t in choices] == [("Alpha", "alpha"), ("Zeta", "zeta")]
    assert choices == list(Topic.objects.published().order_by("name"))


@pytest.mark.django_db
def test_wire_filters_by_topic_and_by_repository(client, site):
    other = TopicFactory(name="Other", slug="other")
    elsewhere = make_digest(other, [ReferenceFactory().repository], headline="Elsewhere digest",
                            date=datetime.date(2026, 1, 1))
    assert "Elsewhere digest" in client.get("/wire/").content.decode()
    by_topic = client.get("/wire/?topic=pytorch").content.decode()
    assert "Elsewhere digest" not in by_topic and "Published headline 1" in by_topic
    repo = elsewhere.digest_references.first().reference.repository
    by_repo = visible_text(client.get(f"/wire/?repository={repo.full_name}").content.decode())
    assert "Elsewhere digest" in by_repo and "Published headline 1" not in by_repo


@pytest.mark.django_db
def test_listings_paginate_newest_first(client, site):
    for day in range(25):
        DigestFactory(topic=site.topic, date=datetime.date(2025, 1, 1) + datetime.timedelta(days=day),
                      headline=f"Old digest {day:02d}")
    first_html = client.get("/wire/").content.decode()
    next_link = re.search(r'rel="next" href="([^"]+)"', first_html).group(1)
    first, second = visible_text(first_html), visible_text(client.get("/wire/" + html.unescape(next_link)).content.decode())
    assert "Page 1" in first and "Page 2" in second and "Older" not in second
    assert first.index("Published headline 2") < first.index("Published headline 0") < first.index("Old digest 24")
    assert "Old digest 00" in second and "Old digest 00" not in first
    assert visible_text(client.get("/wire/?page=2").content.decode()) == second


@pytest.mark.django_db
def test_a_tag_with_non_ascii_letters_has_working_pages(client):
    """taggit keeps non-ASCII letters in slugs; the tag's links must reverse and resolve (found by schemathesis)."""
    from taggit.models import Tag

    post = PostFactory(title="Unicode tagged", tags=["ùûæ café"])
    tag = Tag.objects.get(name="ùûæ café")
    assert tag.slug == "ùûæ-café"
    url = f"/tags/{tag.slug}/"
    page = client.get(post.get_absolute_url()).content.decode()
    assert 'href="/tags/%C3%B9%C3%BB%C3%A6-caf%C3%A9/"' in page  # the card and header link to it, IRI-quoted
    assert "Unicode tagged" in client.get(url).content.decode()
    assert client.get(f"{url}feed.atom").status_code == 200
