"""Writing in the admin in a real browser (Playwright, the system Chromium) under the site's strict CSP: a pasted
PNG becomes an ``image:`` reference with its alt text, the preview shows a citation link and runs nothing from a
hostile body, and Ctrl+S saves and stays on the form. Signed in as an Editor, the role with the fewest rights."""
import base64
import re

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from blog.factories import PostFactory
from blog.models import Post
from digests.factories import DigestFactory, DigestReferenceFactory, ReferenceFactory
from images.models import Image
from publishing.workflow import Status
from tests.site.conftest import artifacts_dir, chromium_path  # noqa: F401 (fixtures)
from tests.images.test_hostile_uploads import SVG
from tests.site.hostile import CORPUS
from tests.site.test_browser import browser  # noqa: F401 (a fixture)
from tests.site.test_browser_csp import strict_page, violations  # noqa: F401 (fixtures)

from .conftest import picture_bytes

PASTE_FILE = """(area, [encoded, name, type]) => {
    const bytes = Uint8Array.from(atob(encoded), (c) => c.charCodeAt(0));
    const transfer = new DataTransfer();
    transfer.items.add(new File([bytes], name, {type}));
    area.focus();
    area.dispatchEvent(new ClipboardEvent('paste', {clipboardData: transfer, bubbles: true, cancelable: true}));
}"""


@pytest.fixture
def editor_page(live_server, strict_page, transactional_db, make_staff_user):  # noqa: F811
    """Signed in through the admin's login form as an Editor; every dialog the page opens is recorded."""
    make_staff_user("writer", "Editors")  # password "pw"
    page = strict_page
    page.dialogs = []
    page.goto(live_server.url + reverse("admin:login"))
    page.fill("#id_username", "writer")
    page.fill("#id_password", "pw")
    page.get_by_role("button", name="Log in").click()
    expect(page.locator("#user-tools")).to_contain_text("writer")
    return page


def test_a_pasted_png_becomes_an_image_reference_with_its_alt_text(live_server, editor_page):
    page = editor_page
    post = PostFactory(body="First paragraph.", status=Status.DRAFT, published_at=None)
    page.goto(live_server.url + reverse("admin:blog_post_change", args=[post.pk]))
    body = page.locator("#id_body")
    body.evaluate("area => area.setSelectionRange(area.value.length, area.value.length)")

    def answer(dialog):
        page.dialogs.append(dialog.message)
        dialog.accept("A chart of build times")

    page.on("dialog", answer)
    body.evaluate(PASTE_FILE, [base64.b64encode(picture_bytes(size=(640, 360))).decode(), "image.png", "image/png"])
    expect(body).to_have_value(re.compile(r"^First paragraph\.\n\n!\[A chart of build times\]\(image:\d+\)"))
    image = Image.objects.get()
    assert body.input_value() == f"First paragraph.\n\n![A chart of build times](image:{image.pk})\n\n"
    assert image.alt == "A chart of build times" and page.dialogs[0].startswith("Alt text for image.png")
    expect(page.locator(".markdown-writing-status").first).to_contain_text(f"image:{image.pk}")
    preview = page.locator(".markdown-preview").first
    expect(preview.locator('img[alt="A chart of build times"]')).to_be_visible()  # the page's <img>, beside the text
    assert violations(page) == []


def test_a_refused_file_is_said_under_the_field_and_leaves_the_text_as_it_was(live_server, editor_page):
    page = editor_page
    post = PostFactory(body="First paragraph.", status=Status.DRAFT, published_at=None)
    page.goto(live_server.url + reverse("admin:blog_post_change", args=[post.pk]))
    body = page.locator("#id_body")
    page.on("dialog", lambda dialog: dialog.accept("A logo"))
    body.evaluate(PASTE_FILE, [base64.b64encode(SVG).decode(), "logo.svg", "image/svg+xml"])
    status = page.locator(".markdown-writing-status").first
    expect(status).to_contain_text("logo.svg was not uploaded. “logo.svg” is an SVG drawing: SVG can carry script")
    expect(status).to_have_class(re.compile("markdown-writing-refused"))
    expect(body).to_have_value("First paragraph.")
    assert Image.objects.count() == 0 and violations(page) == []


def test_the_preview_shows_a_citation_link_and_runs_nothing_from_a_hostile_body(
        live_server, editor_page, artifacts_dir):  # noqa: F811
    page = editor_page
    page.on("dialog", lambda dialog: (page.dialogs.append(dialog.message), dialog.dismiss()))
    digest = DigestFactory(status=Status.DRAFT, published_at=None, summary="Cites [1].", body="Old body [1].")
    DigestReferenceFactory(digest=digest, number=1, reference=ReferenceFactory(title="Speed up the allocator"))
    page.goto(live_server.url + reverse("admin:digests_digest_change", args=[digest.pk]))
    body = page.locator("#id_body")
    pane = body.locator("xpath=..").locator(".markdown-preview")
    expect(pane).to_contain_text("Old body")  # previewed on opening
    body.fill("Cites [ref:1] and [2].\n\n" + "\n\n".join(CORPUS))
    expect(pane.locator("a.citation")).to_have_count(2)
    expect(pane.locator("a.citation").first).to_have_attribute("href", "#ref-1")
    expect(pane.locator(".preview-references")).to_contain_text("Speed up the allocator")
    expect(pane.locator(".preview-missing")).to_contain_text("No reference has this number")
    expect(pane).to_contain_text("onerror=alert('s2')")  # the hostile text, shown as text
    pane.locator("a.citation").first.click()
    expect(pane.locator('.preview-references li[data-number="1"]')).to_have_class("preview-highlight")
    assert page.url.endswith(reverse("admin:digests_digest_change", args=[digest.pk]))  # still on the form
    body.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts_dir / "writing-preview.png"))
    assert pane.locator("script, iframe, object, embed, svg, form, [onerror], [onclick], [style]").count() == 0
    assert page.dialogs == [] and violations(page) == []  # no alert() ran, none was tried


def test_ctrl_s_saves_and_stays_on_the_form(live_server, editor_page):
    page = editor_page
    post = PostFactory(title="Before", status=Status.DRAFT, published_at=None)
    change = reverse("admin:blog_post_change", args=[post.pk])
    page.goto(live_server.url + change)
    page.fill("#id_title", "After Ctrl+S")
    page.locator("#id_body").focus()
    page.keyboard.press("Control+s")
    expect(page.locator(".messagelist .success")).to_contain_text("was changed successfully")
    expect(page.locator("#id_title")).to_have_value("After Ctrl+S")
    assert page.url.endswith(change)
    assert Post.objects.get(pk=post.pk).title == "After Ctrl+S"
    assert violations(page) == []


def test_a_session_ended_while_typing_says_so_in_the_preview_and_keeps_the_text(live_server, editor_page):
    page = editor_page
    post = PostFactory(body="Before.", status=Status.DRAFT, published_at=None)
    page.goto(live_server.url + reverse("admin:blog_post_change", args=[post.pk]))
    pane = page.locator(".markdown-preview").first
    expect(pane).to_contain_text("Before.")
    page.context.clear_cookies(name="sessionid")  # the session expired (the CSRF cookie stays)
    page.locator("#id_body").fill("Typed after the session ended.")
    expect(pane).to_have_text("Your session has ended: sign in again in another tab; your text is still here.")
    expect(page.locator("#id_body")).to_have_value("Typed after the session ended.")
