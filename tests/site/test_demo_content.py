"""With the demo content (``import_seeds``), the pages read like the seed documents, line by line."""
import re

import pytest
from django.core.management import call_command

from blog.models import Post
from digests.models import Digest

from .helpers import assert_in_order, visible_text
from .seed_fixtures import seed_path

PRIORITY_RE = re.compile(r" \[(immediate|plan|monitor)\]$")


@pytest.fixture
def demo(db):
    call_command("import_seeds", verbosity=0)


def expected_digest_lines(prefix: str) -> list[str]:
    """The seed digest's lines as the page shows them: citations as [N], the filing date added, no list dashes."""
    lines = seed_path(prefix).read_text(encoding="utf-8").splitlines()
    expected = []
    for line in lines:
        line = re.sub(r"\[ref:(\d+)\]", r"[\1]", line.removeprefix("- "))
        if line.startswith("By RepoJournal · Filed"):
            expected += ["By RepoJournal · Filed", line.split("Filed", 1)[1].strip()]
        elif PRIORITY_RE.search(line):
            expected += [PRIORITY_RE.sub("", line), PRIORITY_RE.search(line).group(1)]
        else:
            expected.append(line)
    return expected


@pytest.mark.django_db
@pytest.mark.parametrize("prefix", ["000", "001"])
def test_demo_digest_pages_read_like_the_seed_documents(client, demo, prefix):
    headline = seed_path(prefix).read_text(encoding="utf-8").splitlines()[1]
    digest = Digest.objects.published().get(headline=headline)
    text = visible_text(client.get(digest.get_absolute_url()).content.decode())
    assert_in_order(text, expected_digest_lines(prefix))


@pytest.mark.django_db
def test_demo_recent_posts_read_like_the_seed_index(client, demo):
    """Each seed post reads as in 002: byline and date, tags, disclosure, excerpt, "Continue reading →".

    The seed index is not in date order (May 13 comes before May 14); the site
    lists posts newest first, so each post's block is checked where it appears.
    """
    posts = list(Post.objects.published().with_reader_data())
    assert len(posts) == 14
    text = visible_text(client.get("/posts/").content.decode())
    blocks = seed_path("002").read_text(encoding="utf-8").removeprefix("Recent Posts\n").split("Continue reading →")
    # taggit's add() stores tags in set order, so a post is matched by its set of tags, not their order.
    tag_sets = {frozenset(tag.name for tag in post.ordered_tags()): post for post in posts}
    checked = 0
    for block in filter(str.strip, blocks):
        lines = [line for line in block.splitlines() if line.strip()]
        byline, tag_line, rest = lines[0], lines[1], lines[2:]
        post = next(post for names, post in tag_sets.items() if sorted(tag_line) == sorted("".join(names)))
        start = text.find(f"{post.title} {byline}")
        assert start >= 0, byline
        tag_area = text[start + len(post.title) + len(byline) + 1 : text.find(rest[0], start)]
        assert sorted(tag_area.split()) == sorted(tag.name for tag in post.ordered_tags())
        assert_in_order(text[start:], [byline, *rest, "Continue reading →"])
        checked += 1
    assert checked == 14


@pytest.mark.django_db
def test_demo_home_shows_both_digests_and_the_recent_posts(client, demo):
    text = visible_text(client.get("/").content.decode())
    for digest in Digest.objects.published():
        assert digest.headline in text
    for post in Post.objects.published()[:5]:
        assert post.title in text
