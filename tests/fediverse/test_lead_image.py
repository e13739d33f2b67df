"""A post's lead image in its Article, with its alt text (images uploaded as tests/images does)."""
import pytest

from blog.factories import PostFactory
from tests.images.conftest import image_dirs, picture_bytes, upload  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db


def test_the_lead_image_is_the_articles_image_and_attachment(client, upload):  # noqa: F811
    lead, inline = upload({"lead.jpg": picture_bytes("JPEG"), "inline.png": picture_bytes(color="red")},
                          ["A terminal, lit", "Inline"])
    post = PostFactory(body=f"Text\n\n![](image:{inline.pk})", lead_image=lead)
    article = client.get(post.get_absolute_url(), headers={"accept": "application/activity+json"}).json()
    assert article["image"]["name"] == "A terminal, lit"
    assert article["image"]["url"].startswith("http://testserver/")
    assert article["attachment"] == [{**article["image"], "type": "Document"}]
    assert 'alt="Inline"' in article["content"]
    sources = [part.split('"', 1)[0] for part in article["content"].split(' src="')[1:]]
    assert sources and all(source.startswith("http://testserver/") for source in sources)
