"""Images in posts and digests: pages, re-rendering when renditions are ready, uses, deletion, feeds, API."""
import re

import pytest
from django.db.models import ProtectedError
from django.urls import reverse

from blog.factories import PostFactory
from blog.models import Post, PostCard
from digests.factories import DigestFactory
from digests.models import Digest
from images import renditions
from images.models import Image, ImageUse
from publishing.workflow import Status

from tests.api.conftest import bearer, make_token  # noqa: F401 (make_token: a fixture)

from .conftest import picture_bytes

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def render_every_request(settings):
    settings.PAGE_CACHE_ENABLED = False


def test_a_post_page_shows_its_lead_image_eagerly_and_body_images_lazily(client, upload):
    lead, inline = upload({"lead.jpg": picture_bytes("JPEG"), "inline.png": picture_bytes(color="red")},
                          ["The lead", "Inline"])
    post = PostFactory(body=f"Text\n\n![](image:{inline.pk})", lead_image=lead)
    page = client.get(post.get_absolute_url()).content.decode()
    lead_img, body_img = re.findall(r"<img [^>]*>", page.split('<div class="lead-image">', 1)[1])[:2]
    assert 'alt="The lead"' in lead_img and "loading" not in lead_img
    assert 'alt="Inline"' in body_img and 'loading="lazy"' in body_img


def test_pages_showing_an_image_are_re_rendered_when_its_renditions_are_ready(client, upload):
    image, = upload(ready=False)
    post = PostFactory(body=f"![x](image:{image.pk})", lead_image=image)
    digest = DigestFactory(body=f"![x](image:{image.pk})")
    assert "<picture>" not in client.get(post.get_absolute_url()).content.decode()
    renditions.make(image)
    assert client.get(post.get_absolute_url()).content.decode().count("<picture>") == 2  # lead and body
    assert Digest.objects.get(pk=digest.pk).body_html.count("<picture>") == 1


def test_editing_the_alt_text_re_renders_the_pages_showing_the_image(upload):
    image, = upload(alts=["Old words"])
    post = PostFactory(body=f"![](image:{image.pk})")
    image.alt = "New words"
    image.save()
    assert 'alt="New words"' in Post.objects.get(pk=post.pk).body_html


def test_saving_records_which_images_a_page_shows_in_order(upload):
    first, second, unused = upload({"1.png": picture_bytes(), "2.png": picture_bytes(color="red"),
                                    "3.png": picture_bytes(color="blue")})
    post = PostFactory(body=f"![](image:{second.pk}) ![](image:{second.pk}) ![](image:999)", lead_image=first,
                       status=Status.DRAFT, published_at=None)
    assert [(use.image_id, use.published) for use in post.image_uses.all()] == [(first.pk, False), (second.pk, False)]
    post.body, post.status = "No more images.", Status.PUBLISHED
    post.save()
    assert [(use.image_id, use.published, use.title) for use in post.image_uses.all()] == [(first.pk, True, post.title)]
    post.delete()
    assert not ImageUse.objects.exists()


def test_deleting_an_image_a_published_page_shows_is_refused_naming_the_pages(upload):
    image, = upload()
    post = PostFactory(title="A published post", lead_image=image)
    digest = DigestFactory(headline="A published digest", body=f"![](image:{image.pk})")
    with pytest.raises(ProtectedError) as refused:
        image.delete()
    assert f"post “A published post” ({post.get_absolute_url()})" in str(refused.value)
    assert f"digest “A published digest” ({digest.get_absolute_url()})" in str(refused.value)
    assert Image.objects.filter(pk=image.pk).exists()


def test_deleting_an_image_only_drafts_show_is_allowed_and_they_show_its_alt_text(
        upload, django_capture_on_commit_callbacks):
    image, = upload(alts=["Gone soon"])
    post = PostFactory(status=Status.DRAFT, published_at=None, body=f"![](image:{image.pk})", lead_image=image)
    digest = DigestFactory(status=Status.DRAFT, published_at=None, body=f"![](image:{image.pk})")
    with django_capture_on_commit_callbacks(execute=True):
        image.delete()
    post, digest = Post.objects.get(pk=post.pk), Digest.objects.get(pk=digest.pk)
    assert post.lead_image_id is None and post.lead_html == ""  # re-rendered after the commit
    assert "<img" not in post.body_html and "<img" not in digest.body_html


def test_the_admin_refuses_deleting_a_shown_image_and_lists_the_pages(publishing, upload):
    """Refused to a Publisher, the role that may delete images."""
    image, = upload()
    PostFactory(title="Shown here", lead_image=image)
    page = publishing.get(reverse("admin:images_image_delete", args=[image.pk])).content.decode()
    assert "would require deleting the following protected related objects" in page
    assert "post “Shown here”" in page
    response = publishing.post(reverse("admin:images_image_changelist"),
                                 {"action": "delete_selected", "_selected_action": [image.pk], "post": "yes"})
    assert "post “Shown here”" in response.content.decode()
    assert Image.objects.filter(pk=image.pk).exists()


def test_feeds_carry_absolute_image_urls(client, upload):
    image, = upload()
    PostFactory(body=f"![x](image:{image.pk})", lead_image=image)
    DigestFactory(body=f"![x](image:{image.pk})")
    for url in ("/posts/feed.atom", "/posts/feed.rss", "/posts/feed.json", "/wire/feed.atom", "/wire/feed.json"):
        content = client.get(url).content.decode()
        assert "http://testserver/media/" in content, url
        assert not re.search(r'(src|srcset)=(\\?"|&quot;)/media', content), url
        assert re.search(r"http://testserver/media/[0-9a-f]{64}/v1-480\.avif 480w", content), url


def test_the_api_shows_the_images_a_post_and_a_digest_show(client, upload):
    lead, inline = upload({"lead.png": picture_bytes(), "inline.png": picture_bytes(color="red")}, ["Lead", "Inline"])
    post = PostFactory(body=f"![](image:{inline.pk})", lead_image=lead)
    digest = DigestFactory(body=f"![](image:{inline.pk})")
    shown = client.get(f"/api/v1/posts/{post.slug}").json()
    assert shown["lead_image"]["alt"] == "Lead"
    assert [image["alt"] for image in shown["images"]] == ["Lead", "Inline"]
    assert {(item["type"], item["width"]) for item in shown["images"][1]["renditions"]} == {
        (mime, width) for mime in ("image/avif", "image/webp", "image/png") for width in (480, 960, 1440)}
    assert shown["images"][1]["src"] == renditions.url(inline.fallback_name)
    assert [image["id"] for image in client.get(f"/api/v1/digests/{digest.slug}").json()["images"]] == [inline.pk]


def test_the_api_sets_a_lead_image_by_id_and_refuses_unknown_ones(client, upload, publisher, make_token):
    image, = upload()
    post = PostFactory(authors=[])
    headers = bearer(make_token(publisher, "write:content"))
    body = {"title": post.title, "slug": post.slug, "body": "Text", "authors": [], "lead_image": {"id": 10**9}}
    post.status = Status.DRAFT
    post.save()
    refused = client.put(f"/api/v1/posts/{post.slug}", body, content_type="application/json", **headers)
    assert refused.status_code == 422 and "No image has the id" in refused.content.decode()
    body["lead_image"] = {"id": image.pk}
    written = client.put(f"/api/v1/posts/{post.slug}", body, content_type="application/json", **headers)
    assert written.status_code == 200, written.content
    assert written.json()["lead_image"]["id"] == image.pk and Post.objects.get(pk=post.pk).lead_image == image


def test_the_social_card_shows_the_lead_image(upload):
    from io import BytesIO

    from PIL import Image as Pillow

    image, = upload({"red.png": picture_bytes(size=(800, 800), color="red")})
    plain = PostFactory(title="Same title")
    post = PostFactory(title="Same title", lead_image=image)
    card = Pillow.open(BytesIO(bytes(PostCard.objects.get(post=post).png))).convert("RGB")
    assert post.social_card != plain.social_card
    assert card.getpixel((1150, 600)) == (255, 0, 0)  # the photo panel on the right
    no_photo = Pillow.open(BytesIO(bytes(PostCard.objects.get(post=plain).png))).convert("RGB")
    assert no_photo.getpixel((1150, 600)) != (255, 0, 0)
