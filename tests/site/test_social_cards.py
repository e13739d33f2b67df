"""og:image: a PNG card per post and digest, drawn when what it shows changes, cached for good at its URL."""
import io

import pytest
from PIL import Image

from blog.factories import AuthorFactory, PostFactory
from blog.models import Post
from digests.factories import DigestFactory
from publishing.social_cards import HEIGHT, IMMUTABLE, WIDTH

from .metas import metas

pytestmark = pytest.mark.django_db
ORIGIN = "http://127.0.0.1:8000"


def fetch_card(client, page_url: str) -> tuple[str, bytes]:
    """The page's og:image URL and the image it names, checked against what the page states."""
    found = metas(client, page_url)
    assert found["twitter:card"] == "summary_large_image"
    image_url = found["og:image"]
    assert image_url.startswith(f"{ORIGIN}/") and image_url.endswith(".png")
    response = client.get(image_url.removeprefix(ORIGIN))
    assert response.status_code == 200 and response["Content-Type"] == "image/png"
    assert response["Cache-Control"] == IMMUTABLE
    image = Image.open(io.BytesIO(response.content))
    assert image.format == "PNG"
    assert image.size == (int(found["og:image:width"]), int(found["og:image:height"])) == (WIDTH, HEIGHT)
    return image_url, response.content


def test_a_post_page_names_its_card_and_a_new_title_makes_a_new_one(client):
    post = PostFactory(title="Eager CUDA memory", authors=[AuthorFactory(name="Edward Yang")])
    first_url, first_png = fetch_card(client, post.get_absolute_url())
    post.title = "Eager CUDA memory, revisited"
    post.save()
    second_url, second_png = fetch_card(client, post.get_absolute_url())
    assert second_url != first_url and second_png != first_png
    old = client.get(first_url.removeprefix(ORIGIN))  # an old link follows to the current card
    assert old.status_code == 302 and old["Location"] == second_url.removeprefix(ORIGIN)


def test_an_unchanged_save_keeps_the_card(client):
    post = PostFactory(title="Stable")
    before = Post.objects.get(pk=post.pk).social_card
    post.excerpt = "An excerpt the card does not show."
    post.save()
    assert before and Post.objects.get(pk=post.pk).social_card == before


def test_a_new_author_redraws_the_post_card():
    post = PostFactory(authors=[AuthorFactory(name="Ada")])
    before = Post.objects.get(pk=post.pk).social_card
    post.post_authors.create(author=AuthorFactory(name="Grace"), position=1)
    assert Post.objects.get(pk=post.pk).social_card != before


def test_a_digest_page_names_its_card_and_a_new_headline_makes_a_new_one(client):
    digest = DigestFactory(headline="Inductor ships a faster path")
    first_url, first_png = fetch_card(client, digest.get_absolute_url())
    digest.headline = "Inductor ships a faster path, again"
    digest.save()
    second_url, second_png = fetch_card(client, digest.get_absolute_url())
    assert second_url != first_url and second_png != first_png


def test_drafts_have_no_public_card(client):
    from publishing.workflow import Status

    post = PostFactory(status=Status.DRAFT, published_at=None)
    post.refresh_from_db()
    assert client.get(f"/posts/{post.slug}/card-{post.social_card}.png").status_code == 404


def test_the_edge_keeps_a_card_under_its_own_immutable_policy_and_files_it_under_its_post(client):
    post = PostFactory(title="Cards at the edge", authors=[AuthorFactory(name="Edward Yang")])
    image_url = metas(client, post.get_absolute_url())["og:image"]
    response = client.get(image_url.removeprefix(ORIGIN))
    assert response["Cache-Control"] == IMMUTABLE  # not the pages' purge-driven policy
    assert f"post-{post.pk}" in response["Surrogate-Key"].split()  # unpublishing the post purges it
