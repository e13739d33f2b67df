"""The seed documents, rebuilt as content, read on the site like the documents themselves."""
import re

import pytest

from .helpers import assert_in_order, visible_text
from .seed_fixtures import SEED_POSTS, build_seed_digest, build_seed_posts


@pytest.mark.django_db
@pytest.mark.parametrize("prefix", ["000", "001"])
def test_digest_page_carries_every_seed_element_in_order(client, prefix):
    digest, seed = build_seed_digest(prefix)
    text = visible_text(client.get(digest.get_absolute_url()).content.decode())

    expected = [seed.kicker, seed.headline, f"By RepoJournal · Filed {digest.display_date} · About {seed.topic}"]
    expected.append("Action items")
    for action in seed.actions:
        expected += ["→", action["text"], action["repo"], action["priority"]]
    expected.append("References")
    for ref in seed.references:
        expected += [f"[{ref['number']}] {ref['title']}", ref["repo"]]
    expected.append("FAQ")
    for question, answer in seed.faq:
        # the generated FAQ strips citations without the seed's orphaned punctuation ("operations , while")
        expected += [question, re.sub(r"\s+([.,;:!?])(?=\s|$)", r"\1", answer)]
    expected += ["Which repositories shipped", *seed.faq[2][1].split(", ")]
    assert_in_order(text, expected)


@pytest.mark.django_db
@pytest.mark.parametrize("prefix", ["000", "001"])
def test_every_seed_citation_links_to_its_numbered_reference(client, prefix):
    digest, seed = build_seed_digest(prefix)
    html = client.get(digest.get_absolute_url()).content.decode()
    for ref in seed.references:
        assert f'id="ref-{ref["number"]}"' in html
    cited = {int(n) for n in __import__("re").findall(r'class="citation" href="#ref-(\d+)"', html)}
    assert cited == {int(ref["number"]) for ref in seed.references}
    summary_and_body = visible_text(html)
    assert "[ref:1]" not in summary_and_body


@pytest.mark.django_db
def test_seed_references_link_to_github_and_show_the_arrow_only_when_linked(client):
    digest, seed = build_seed_digest("000")
    html = client.get(digest.get_absolute_url()).content.decode()
    text = visible_text(html)
    for ref in seed.references:
        if ref["arrow"]:
            assert f'href="https://github.com/{ref["repo"]}/pull/{ref["number"]}"' in html
            assert f"{ref['title']} ↗ {ref['repo']}" in text
        else:
            assert f"{ref['title']} {ref['repo']}" in text


@pytest.mark.django_db
def test_recent_posts_reads_like_the_seed(client):
    posts, excerpts = build_seed_posts()
    text = visible_text(client.get("/posts/").content.decode())
    expected = []
    for seed, excerpt in zip(SEED_POSTS, excerpts):
        byline = ", ".join(f"{name} (@{handle})" if handle else name for name, handle in seed["authors"])
        expected += [byline + " · " + seed["date"].strftime("%B %-d, %Y")]
        if seed["disclosure"]:
            expected.append("Disclosure. " + seed["disclosure"])
        expected += [excerpt[:120], "Continue reading →"]
    assert_in_order(text, expected)


@pytest.mark.django_db
def test_recent_posts_link_every_author_and_tag(client):
    posts, _ = build_seed_posts()
    html = client.get("/posts/").content.decode()
    for post in posts:
        for author in post.ordered_authors():
            assert f'href="/authors/{author.slug}/"' in html
        for tag in post.tags.all():
            assert f'href="/tags/{tag.slug}/" rel="tag">{tag.name}</a>' in html
        assert f'href="{post.get_absolute_url()}">Continue reading →' in html
