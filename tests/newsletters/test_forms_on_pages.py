"""The sign-up form on every reader page that offers one, preselected from the page, and the page still
cacheable: the same bytes for everyone (no CSRF token, no cookie), served from the page cache again."""
import re
from pathlib import Path

import pytest
from django.conf import settings as django_settings

from blog.factories import AuthorFactory, PostFactory
from digests.factories import DigestFactory, DigestReferenceFactory, ReferenceFactory, RepositoryFactory, TopicFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def pages(db):
    topic = TopicFactory(name="PyTorch", slug="pytorch")
    repository = RepositoryFactory(full_name="pytorch/executorch", topic=topic)
    digest = DigestFactory(topic=topic, slug="pytorch-day")
    DigestReferenceFactory(digest=digest, number=1, reference=ReferenceFactory(repository=repository))
    post = PostFactory(slug="a-post", tags=["cuda"], authors=[AuthorFactory(name="Edward Yang", slug="edward-yang")])
    return {
        "/": ("wire", "blog"), "/wire/": ("wire", None), "/topics/pytorch/": ("topic:pytorch", None),
        "/repos/pytorch/executorch/": ("repository:pytorch/executorch", None), "/tags/cuda/": ("tag:cuda", None),
        "/authors/edward-yang/": ("author:edward-yang", None), "/posts/": ("blog", None),
        post.get_absolute_url(): ("blog", None), digest.get_absolute_url(): ("wire", "topic:pytorch"),
    }


def sign_up_form(html: str) -> str:
    found = re.findall(r'<form class="subscribe" method="post" action="/newsletters/subscribe/"[^>]*>(.*?)</form>', html, re.S)
    assert len(found) == 1
    return found[0]


def test_each_page_has_the_form_preselected_and_stays_cached(client, settings, pages):
    settings.PAGE_CACHE_ENABLED = True
    for url, (chosen, other) in pages.items():
        first = client.get(url)
        assert first.status_code == 200, url
        form = sign_up_form(first.content.decode())
        assert 'type="email"' in form and " required" in form
        if other:
            assert f'<option value="{chosen}" selected>' in form and f'<option value="{other}">' in form, url
        else:
            assert f'<input type="hidden" name="follow" value="{chosen}">' in form, url
        assert re.search(r'<input id="subscribe-website" name="website" type="text" autocomplete="off" tabindex="-1">', form)
        assert 'name="cadence"' in form and "style=" not in form and "<script" not in form
        assert b"csrfmiddlewaretoken" not in first.content, url
        assert not first.cookies and "Cookie" not in first.get("Vary", ""), url
        assert first["X-Page-Cache"] == "miss" and first["Cache-Control"].startswith("public"), url
        second = client.get(url)
        assert second["X-Page-Cache"] == "hit" and second.content == first.content, url
        assert not client.cookies


def test_the_honeypot_is_hidden_by_the_stylesheet():
    """No inline style (the CSP forbids it): the site's stylesheet hides the trap."""
    css = (Path(django_settings.BASE_DIR) / "static" / "css" / "site.css").read_text()
    assert re.search(r"\.subscribe-trap\s*\{\s*display:\s*none;", css)


def test_the_home_page_form_signs_up_to_the_wire(client, pages, monkeypatch):
    from newsletters import tasks

    monkeypatch.setattr(tasks.send_confirmation, "apply_async", lambda args, **options: None)
    answer = client.post("/newsletters/subscribe/", {"email": "a@example.org", "follow": "wire", "cadence": "daily"})
    assert answer.status_code == 200
    from newsletters.models import Subscription

    assert list(Subscription.objects.values_list("kind", "target", "cadence")) == [("wire", "", "daily")]
