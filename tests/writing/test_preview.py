"""The preview beside the admin's Markdown fields: the public page's renderer and sanitiser, staff who may change
the item only, citations listed as the form stands, and a precise 4xx for what it will not preview."""
import re

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from blog.factories import PostFactory
from blog.models import Post
from digests.factories import DigestFactory, DigestReferenceFactory, FAQEntryFactory, ReferenceFactory
from digests.models import Digest
from publishing import previews
from publishing.rendering import link_citations, render_markdown
from publishing.workflow import Status
from tests.site.hostile import CORPUS, live_markup

from .conftest import preview, preview_url

pytestmark = pytest.mark.django_db

HOSTILE = "\n\n".join(CORPUS)
ONE_LINE = " ".join(item.replace("\n", " ") for item in CORPUS)


def draft_post(**fields) -> Post:
    return PostFactory(status=Status.DRAFT, published_at=None, **fields)


def draft_digest(**fields) -> Digest:
    return DigestFactory(status=Status.DRAFT, published_at=None, **fields)


def html_of(response) -> str:
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "application/json" and "no-store" in response["Cache-Control"]
    return response.json()["html"]


# --- What the preview shows: the page's own HTML --------------------------------------------------------------

def test_a_post_body_previews_exactly_as_the_page_renders_it(staff, upload):
    image, = upload(alts=["A harbour at dusk"])
    text = f"# Heading\n\nSome *emphasis*, a [link](https://example.org) and `code`.\n\n![](image:{image.pk})\n"
    post = draft_post(body="Old text.")
    html = html_of(preview(staff, preview_url("blog_post", post.pk), "body", text))
    post.body = text
    post.render_body()
    assert html == post.body_html  # the page's body, byte for byte
    assert "<picture>" in html and 'alt="A harbour at dusk"' in html  # image: shown as the page shows it


def test_the_add_page_previews_too(staff):
    html = html_of(preview(staff, preview_url("blog_post"), "body", "A **new** post."))
    assert html == "<p>A <strong>new</strong> post.</p>\n"


def test_hostile_text_is_as_harmless_in_the_preview_as_on_the_page(staff):
    post = draft_post()
    digest = draft_digest()
    DigestReferenceFactory(digest=digest, number=1, reference=ReferenceFactory(title="Hostile " + ONE_LINE[:300]))
    FAQEntryFactory(digest=digest, position=1)
    post_html = html_of(preview(staff, preview_url("blog_post", post.pk), "body", HOSTILE))
    post.body = HOSTILE
    post.render_body()
    assert post_html == post.body_html and live_markup(post_html) == []
    digest_url = preview_url("digests_digest", digest.pk)
    digest.body = "Cites [ref:1].\n\n" + HOSTILE  # the citation first: not inside the corpus's last code fence
    digest.render_body()
    body_html = html_of(preview(staff, digest_url, "body", digest.body))
    assert body_html.startswith(digest.body_html)  # the page's body, then what it cites
    answer_html = html_of(preview(staff, digest_url, "faq_entries-0-answer", ONE_LINE + " [1]"))
    assert answer_html.startswith(link_citations(ONE_LINE + " [1]"))
    for html in (body_html, answer_html, html_of(preview(staff, digest_url, "summary", "[1] " + HOSTILE))):
        assert live_markup(html) == []
        assert "&lt;script&gt;" in html or "alert(" in html  # the hostile text is there, as text
        assert "Hostile &lt;script&gt;" in html  # the cited reference's hostile title, escaped


def test_digest_citations_link_and_list_the_references_as_the_form_stands(staff, admin_form_data):
    digest = draft_digest(summary="Cites [1].", body="Body [1].")
    DigestReferenceFactory(digest=digest, number=1, reference=ReferenceFactory(title="Saved reference"))
    added = ReferenceFactory(title="Added in the form, not saved yet", url="https://github.com/o/r/pull/2")
    form = admin_form_data(staff.get(reverse("admin:digests_digest_change", args=[digest.pk])))
    form.update({"digest_references-1-number": "2", "digest_references-1-reference": str(added.pk),
                 "digest_references-TOTAL_FORMS": "2"})
    html = html_of(preview(staff, preview_url("digests_digest", digest.pk), "body", "See [1], [ref:2] and [3].",
                           **{k: v for k, v in form.items() if k != "body"}))
    assert html.startswith(render_markdown("See [1], [ref:2] and [3].", citations=True, images=True, eager=1))
    assert '<a class="citation" href="#ref-1"' in html and '<a class="citation" href="#ref-2"' in html
    cited = html[html.index('class="preview-references"'):]
    assert cited.index("Saved reference") < cited.index("Added in the form, not saved yet")
    assert 'href="https://github.com/o/r/pull/2"' in cited
    assert re.search(r'class="preview-missing" data-number="3">.*No reference has this number', cited)


def test_a_citation_row_deleted_in_the_form_no_longer_counts(staff, admin_form_data):
    digest = draft_digest(summary="Cites [1].")
    DigestReferenceFactory(digest=digest, number=1, reference=ReferenceFactory(title="About to go"))
    form = admin_form_data(staff.get(reverse("admin:digests_digest_change", args=[digest.pk])))
    form["digest_references-0-DELETE"] = "on"
    html = html_of(preview(staff, preview_url("digests_digest", digest.pk), "summary", "Cites [1].",
                           **{k: v for k, v in form.items() if k != "summary"}))
    assert "About to go" not in html and 'class="preview-missing" data-number="1"' in html


def test_without_the_form_the_saved_references_are_listed(staff):
    digest = draft_digest()
    DigestReferenceFactory(digest=digest, number=4, reference=ReferenceFactory(title="Saved and cited"))
    html = html_of(preview(staff, preview_url("digests_digest", digest.pk), "summary", "Only [4]."))
    assert html.startswith(render_markdown("Only [4].", citations=True))
    assert "Saved and cited" in html


def test_a_summary_shows_no_image_and_a_post_body_no_citation_as_on_the_page(staff, upload):
    image, = upload()
    digest = draft_digest()
    text = f"![A view](image:{image.pk})"
    summary = html_of(preview(staff, preview_url("digests_digest", digest.pk), "summary", text))
    assert "<picture>" not in summary and summary == render_markdown(text, citations=True)
    body = html_of(preview(staff, preview_url("blog_post", draft_post().pk), "body", "Not a citation [1]."))
    assert body == "<p>Not a citation [1].</p>\n"


def test_text_with_no_citation_asks_for_no_references(staff, django_assert_max_num_queries):
    digest = draft_digest()
    DigestReferenceFactory(digest=digest, number=1)
    url = preview_url("digests_digest", digest.pk)
    with django_assert_max_num_queries(12) as counted:
        preview(staff, url, "body", "Nothing cited here.")
    assert not any('"digests_reference"."title"' in query["sql"] for query in counted.captured_queries)
    with django_assert_max_num_queries(14) as counted:
        preview(staff, url, "body", "Cites [1].")
    assert any('"digests_reference"."title"' in query["sql"] for query in counted.captured_queries)


# --- Who may ask, and what it refuses --------------------------------------------------------------------------

def test_anonymous_and_non_staff_users_are_sent_to_sign_in(django_user_model):
    url = preview_url("blog_post", draft_post().pk)
    reader = Client()
    reader.force_login(django_user_model.objects.create_user("reader", password="pw"))
    for client in (Client(), reader):
        response = preview(client, url, "body", "Hello")
        assert response.status_code == 302 and reverse("admin:login") in response["Location"]


def test_staff_who_may_only_view_posts_get_no_preview(client, django_user_model):
    viewer = django_user_model.objects.create_user("viewer", password="pw", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_post"))
    client.force_login(viewer)
    post = draft_post()
    for url in (preview_url("blog_post", post.pk), preview_url("blog_post")):
        response = preview(client, url, "body", "Hello")
        assert response.status_code == 403 and "may not change" in response.json()["error"]


def test_an_editor_gets_no_preview_of_what_only_publishers_may_change(client, editor, publisher):
    published = PostFactory(status=Status.PUBLISHED)
    client.force_login(editor)
    assert preview(client, preview_url("blog_post", published.pk), "body", "Hello").status_code == 403
    client.force_login(publisher)
    assert preview(client, preview_url("blog_post", published.pk), "body", "Hello").status_code == 200


def test_what_the_preview_will_not_do_is_a_precise_4xx(staff, settings):
    post = draft_post()
    url = preview_url("blog_post", post.pk)
    assert staff.get(url).status_code == 405
    unknown = preview(staff, url, "title", "A title")
    assert unknown.status_code == 400 and "“title” is not a Markdown field" in unknown.json()["error"]
    assert preview(staff, url, "faq_entries-0-answer", "No FAQ on a post").status_code == 400
    gone = preview(staff, preview_url("blog_post", post.pk + 1000), "body", "Hello")
    assert gone.status_code == 404 and "no longer exists" in gone.json()["error"]


def test_a_huge_body_is_a_413_saying_so_not_a_500(staff, settings):
    url = preview_url("blog_post", draft_post().pk)
    huge = preview(staff, url, "body", "word " * (previews.MAX_CHARS // 5 + 1))
    assert huge.status_code == 413
    assert f"the preview shows at most {previews.MAX_CHARS:,}" in huge.json()["error"]
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10_000  # a form larger than Django reads: its own 400
    assert preview(staff, url, "body", "x" * 20_000).status_code == 400


# --- The form ---------------------------------------------------------------------------------------------------

def test_every_markdown_field_has_its_preview_and_only_image_fields_take_dropped_files(staff):
    post, digest = draft_post(), draft_digest()
    FAQEntryFactory(digest=digest, position=1, answer="An answer [1].")
    post_page = staff.get(reverse("admin:blog_post_change", args=[post.pk])).content.decode()
    digest_page = staff.get(reverse("admin:digests_digest_change", args=[digest.pk])).content.decode()
    paste = reverse("admin:images_image_paste")

    def textarea(page, name):
        return re.search(rf'<textarea [^>]*name="{name}"[^>]*>', page).group(0)

    assert f'data-preview-url="{preview_url("blog_post", post.pk)}"' in textarea(post_page, "body")
    assert f'data-upload-url="{paste}"' in textarea(post_page, "body")
    for name in ("summary", "body", "faq_entries-0-answer"):
        assert f'data-preview-url="{preview_url("digests_digest", digest.pk)}"' in textarea(digest_page, name), name
    assert f'data-upload-url="{paste}"' in textarea(digest_page, "body")
    assert "data-upload-url" not in textarea(digest_page, "summary") + textarea(digest_page, "faq_entries-0-answer")
    assert 'data-preview-url="' in textarea(digest_page, "faq_entries-__prefix__-answer")  # rows added later
    add_page = staff.get(reverse("admin:blog_post_add")).content.decode()
    assert f'data-preview-url="{preview_url("blog_post")}"' in textarea(add_page, "body")
    for page in (post_page, digest_page, add_page):
        assert "images/writing.js" in page and "images/writing.css" in page
        assert re.findall(r"<script(?![^>]*\bsrc=)[^>]*>", page) == []  # no inline script: the CSP stays strict


def test_on_the_add_page_an_faq_answer_cites_the_rows_typed_so_far(staff):
    typed = ReferenceFactory(title="Typed in the new digest's form")
    form = {"digest_references-TOTAL_FORMS": "1", "digest_references-0-number": "1",
            "digest_references-0-reference": str(typed.pk)}
    html = html_of(preview(staff, preview_url("digests_digest"), "faq_entries-0-answer", "Because [1] and [2].", **form))
    assert html.startswith(link_citations("Because [1] and [2]."))
    assert "Typed in the new digest&#x27;s form" in html and 'class="preview-missing" data-number="2"' in html
