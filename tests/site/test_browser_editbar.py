"""The edit bar in a real browser, with the Content-Security-Policy enforced (issue 26): its
accessibility check loads axe-core from the site, lists the page's violations, works from the
keyboard, passes axe itself and causes no policy violation; the policy is the readers' own."""
import pytest
from django.test import Client
from playwright.sync_api import expect

from blog.factories import PostFactory

from .test_browser import BLOCKING_IMPACTS, browser, reader_site  # noqa: F401 (fixtures)
from .test_browser_csp import PASSWORD, strict_page, violations  # noqa: F401 (fixtures)

#: Every violation axe finds inside the bar, whatever its impact (with the copy of axe the bar loaded).
OWN_VIOLATIONS = "async () => (await axe.run('#editbar', {resultTypes: ['violations']})).violations.map(v => v.id)"
PAGE_VIOLATIONS = """async () => (await axe.run(document, {resultTypes: ['violations']})).violations
    .map(v => ({id: v.id, impact: v.impact}))"""


@pytest.fixture
def staff_page(live_server, strict_page, django_user_model):  # noqa: F811
    """Signed in through the admin's login form, as an editor-in-chief would be."""
    django_user_model.objects.create_superuser("chief", "chief@example.org", PASSWORD)
    strict_page.goto(live_server.url + "/admin/login/")
    strict_page.fill("#id_username", "chief")
    strict_page.fill("#id_password", PASSWORD)
    strict_page.get_by_role("button", name="Log in").click()
    expect(strict_page.locator("#user-tools")).to_contain_text("chief")
    return strict_page


def run_check(page):
    """Press the bar's button from the keyboard and wait for the list."""
    bar = page.get_by_role("complementary", name="Edit bar")
    bar.get_by_role("button", name="Check accessibility").focus()
    page.keyboard.press("Enter")
    expect(bar.locator(".editbar-a11y-summary")).not_to_have_text("Checking…")
    expect(bar.locator(".editbar-a11y-summary")).not_to_have_text("")
    return bar


def test_the_check_lists_the_pages_violations_and_shows_each_element(
        live_server, staff_page, reader_site, artifacts_dir):  # noqa: F811
    page = staff_page
    post = PostFactory(title="A link without words", slug="wordless-link", body="See [](https://example.com/empty).")
    response = page.goto(live_server.url + post.get_absolute_url())
    readers_policy = Client().get(post.get_absolute_url())["Content-Security-Policy"]
    assert response.headers["content-security-policy"] == readers_policy
    bar = run_check(page)
    expect(page.locator("#editbar-a11y-heading")).to_be_focused()
    expect(bar.locator(".editbar-a11y-summary")).to_contain_text("broken on this page")
    wordless = bar.locator(".editbar-violation").filter(has_text="link-name")
    expect(wordless).to_have_count(1)
    expect(wordless).to_contain_text("Links must have discernible text")
    wordless.get_by_role("button").first.click()
    highlighted = page.locator(".editbar-highlight")
    expect(highlighted).to_have_attribute("href", "https://example.com/empty")
    expect(highlighted).to_be_focused()
    page.screenshot(path=str(artifacts_dir / "editbar-check.png"))
    assert page.evaluate(OWN_VIOLATIONS) == []
    assert violations(page) == []


def test_the_bar_passes_axe_and_breaks_no_policy_on_reader_pages(live_server, staff_page, reader_site):  # noqa: F811
    site, digest = reader_site
    pages = ["/", digest.get_absolute_url(), site.posts[1].get_absolute_url(), "/tags/cuda/", "/authors/edward-yang/",
             "/repos/pytorch/pytorch/", "/no/such/page/"]
    found = {}
    for path in pages:
        staff_page.goto(live_server.url + path)
        bar = run_check(staff_page)
        expect(bar.get_by_role("link", name="Admin")).to_be_visible()
        blocking = [v for v in staff_page.evaluate(PAGE_VIOLATIONS) if v["impact"] in BLOCKING_IMPACTS]
        found[path] = {"bar": staff_page.evaluate(OWN_VIOLATIONS), "page": blocking, "csp": violations(staff_page)}
    assert found == {path: {"bar": [], "page": [], "csp": []} for path in pages}


def test_the_check_opens_and_closes_from_the_keyboard(live_server, staff_page, reader_site):  # noqa: F811
    site, _digest = reader_site
    page = staff_page
    page.goto(live_server.url + site.posts[1].get_absolute_url())
    bar = run_check(page)
    button = bar.get_by_role("button", name="Check accessibility")
    expect(button).to_have_attribute("aria-expanded", "true")
    expect(bar.locator("#editbar-a11y")).to_be_visible()
    page.keyboard.press("Escape")
    expect(bar.locator("#editbar-a11y")).to_be_hidden()
    expect(button).to_have_attribute("aria-expanded", "false")
    expect(button).to_be_focused()
    page.keyboard.press("Tab")
    expect(bar.get_by_role("link", name="Admin")).to_be_focused()
    assert violations(page) == []
