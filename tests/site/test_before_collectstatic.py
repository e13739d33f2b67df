"""Under production's static files storage, before ``collectstatic`` has run, content still renders and cards draw.

Production reads static URLs from the manifest ``collectstatic`` writes; a stored rendering
(a digest's or post's JSON-LD names the logo) used to ask it too, so ``import_seeds`` -- or any
save that renders and draws a card -- crashed with ``Missing staticfiles manifest entry for
'img/logo.svg'`` when run before it. The logo is now found by the staticfiles finders.
"""
import pytest
from django.core.management import call_command
from django.templatetags.static import static

from blog.models import Post, PostCard
from digests.models import Digest, DigestCard
from publishing import structured_data

pytestmark = pytest.mark.django_db

LOGO_URL = "http://127.0.0.1:8000/static/img/logo.svg"


@pytest.fixture
def before_collectstatic(settings, tmp_path):
    """Production's storage (fingerprinted names from a manifest) over an empty STATIC_ROOT."""
    settings.STATIC_ROOT = tmp_path / "staticfiles"
    settings.STATIC_ROOT.mkdir()
    settings.STORAGES = {**settings.STORAGES,
                         "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"}}
    with pytest.raises(ValueError, match="Missing staticfiles manifest entry for 'img/logo.svg'"):
        static("img/logo.svg")  # what the storage answers now: the case this file is about


def test_import_seeds_renders_and_draws_the_cards_before_collectstatic(before_collectstatic):
    call_command("import_seeds", verbosity=0)
    digests = list(Digest.objects.all())
    assert digests and all(f'"logo": {{"@type": "ImageObject", "url": "{LOGO_URL}"}}' in digest.head_html
                           for digest in digests)
    post = Post.objects.order_by("pk").first()
    PostCard.objects.all().delete()
    DigestCard.objects.all().delete()
    Post.objects.update(social_card="")
    Digest.objects.update(social_card="")
    post.social_card = digests[0].social_card = ""
    post.draw_social_card()  # what a save, a rename's worker and the sweep call
    digests[0].draw_social_card()
    assert PostCard.objects.filter(post=post).exists() and DigestCard.objects.filter(digest=digests[0]).exists()
    assert Post.objects.get(pk=post.pk).social_card


def test_the_logo_url_is_the_unfingerprinted_one_whatever_the_storage(settings):
    """The same URL with or without a manifest: a stored rendering outlives deployments, and
    collectstatic keeps the original name beside the fingerprinted copy."""
    assert structured_data.publisher()["logo"]["url"] == LOGO_URL


def test_a_missing_logo_is_an_error_as_the_manifest_made_it(monkeypatch):
    from django.core.exceptions import ImproperlyConfigured

    monkeypatch.setattr(structured_data, "LOGO", "img/no-such-logo.svg")
    with pytest.raises(ImproperlyConfigured, match="no-such-logo.svg"):
        structured_data.publisher()
