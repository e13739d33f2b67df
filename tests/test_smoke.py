import pytest

from blog.factories import PostFactory
from digests.factories import DigestFactory


@pytest.mark.django_db
def test_home_lists_published_content(client):
    digest = DigestFactory(headline="A visible headline")
    post = PostFactory(title="A visible post")
    response = client.get("/")
    assert response.status_code == 200
    assert digest.headline in response.content.decode()
    assert post.title in response.content.decode()
