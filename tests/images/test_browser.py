"""The admin's image scripts in a real browser (Playwright, Debian's Chromium), under the site's CSP:
the body picker inserts the chosen image's Markdown at the cursor; the upload page asks one alt text per file."""
import pytest
from django.urls import reverse
from playwright.sync_api import expect, sync_playwright

from blog.factories import PostFactory
from publishing.workflow import Status
from tests.site.conftest import CHROMIUM_ARGS, chromium_path  # noqa: F401 (a fixture)

from .conftest import picture_bytes


@pytest.fixture
def staff_page(chromium_path, live_server, transactional_db, make_staff_user, monkeypatch):  # noqa: F811
    """Signed in as an Editor, the role with the fewest rights that uploads and places images."""
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    make_staff_user("boss", "Editors")  # password "pw"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
        page.goto(f"{live_server.url}{reverse('admin:login')}")
        page.fill("#id_username", "boss")
        page.fill("#id_password", "pw")
        page.click("input[type=submit]")
        yield page
        browser.close()


def test_the_picker_inserts_the_chosen_images_markdown_at_the_cursor(staff_page, live_server, upload):
    image, = upload({"chart.png": picture_bytes()}, ["A chart"])
    post = PostFactory(body="First paragraph.", status=Status.DRAFT, published_at=None)
    staff_page.goto(f"{live_server.url}{reverse('admin:blog_post_change', args=[post.pk])}")
    staff_page.locator("#id_body").evaluate("area => area.setSelectionRange(area.value.length, area.value.length)")
    with staff_page.expect_popup() as opened:
        staff_page.click("#lookup_id_body_image")
    popup = opened.value
    popup.wait_for_load_state("load")  # the admin binds the link's click when its scripts ran (a flake under load)
    popup.click(f'a[data-popup-opener="{image.pk}"]')
    expect(staff_page.locator("#id_body")).to_have_value(f"First paragraph.\n\n![A chart](image:{image.pk})\n\n")


def test_the_upload_page_asks_one_alt_text_per_chosen_file(staff_page, live_server):
    staff_page.goto(f"{live_server.url}{reverse('admin:images_image_upload')}")
    staff_page.set_input_files("input[type=file]", [
        {"name": "one.png", "mimeType": "image/png", "buffer": picture_bytes()},
        {"name": "two.png", "mimeType": "image/png", "buffer": picture_bytes(color="red")},
    ])
    expect(staff_page.locator("input[name=alt]")).to_have_count(2)
    expect(staff_page.locator("label[for=id_alt_1]")).to_have_text("Alt text for two.png:")
