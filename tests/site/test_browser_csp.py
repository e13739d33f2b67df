"""The Content-Security-Policy in a real browser: reader pages and the admin (inline rows,
autocomplete) work with it in force and report no violation (issue 17, item 4)."""
import pytest
from playwright.sync_api import expect

from blog.factories import AuthorFactory

from .test_browser import browser, reader_site  # noqa: F401 (fixtures)

PASSWORD = "a long and unguessable password"
RECORD_VIOLATIONS = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", (e) => window.__csp.push(
    {directive: e.violatedDirective, blocked: e.blockedURI, source: e.sourceFile, line: e.lineNumber}));
"""


@pytest.fixture(autouse=True)
def fresh_content_types():
    """Forget content-type ids cached before this test's database was set up.

    Transactional tests flush the tables and recreate content types under new ids;
    an id cached in this process from before (ContentTypeManager keeps one cache per
    process) made the admin's log entry point at a row that is gone (CI, PostgreSQL,
    after tests/api/test_docs_examples.py and test_preconditions.py).
    """
    from django.contrib.contenttypes.models import ContentType

    ContentType.objects.clear_cache()


@pytest.fixture
def strict_page(browser):  # noqa: F811
    """A page with the policy enforced that records violations (event and console) as they happen."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.add_init_script(RECORD_VIOLATIONS)  # init scripts come from the browser, not the page
    page = context.new_page()
    page.console_csp = []
    page.on("console", lambda message: page.console_csp.append(message.text)
            if "Content Security Policy" in message.text else None)
    yield page
    context.close()


def violations(page) -> list:
    return page.evaluate("window.__csp") + page.console_csp


def test_the_violation_recorder_sees_a_blocked_inline_script(strict_page, live_server):
    """Or the checks below prove nothing: a page under the site's policy with an inline script."""
    def serve(route):
        route.fulfill(status=200, content_type="text/html", headers={"Content-Security-Policy": "script-src 'self'"},
                      body="<!doctype html><title>x</title><script>document.title = 'ran'</script>")

    strict_page.route(live_server.url + "/probe", serve)
    strict_page.goto(live_server.url + "/probe")
    assert strict_page.title() == "x"
    assert any(v["directive"].startswith("script-src") for v in strict_page.evaluate("window.__csp"))


def test_reader_pages_show_no_violation(live_server, strict_page, reader_site):  # noqa: F811
    site, digest = reader_site
    for path in ["/", digest.get_absolute_url(), site.posts[1].get_absolute_url(), "/tags/cuda/", "/wire/",
                 "/repos/pytorch/pytorch/", "/search/?q=compile"]:
        response = strict_page.goto(live_server.url + path)
        assert "script-src 'self'" in response.headers["content-security-policy"]
        assert violations(strict_page) == [], path


def test_the_admin_post_form_with_an_inline_row_and_autocomplete_shows_no_violation(
        live_server, strict_page, reader_site, django_user_model):  # noqa: F811
    site, _digest = reader_site
    django_user_model.objects.create_superuser("chief", "chief@example.org", PASSWORD)
    AuthorFactory(name="Zelda Quill", slug="zelda-quill")
    page = strict_page
    page.goto(live_server.url + "/admin/login/")
    page.fill("#id_username", "chief")
    page.fill("#id_password", PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.locator("#user-tools")).to_contain_text("chief")

    post = site.posts[1]
    page.goto(live_server.url + f"/admin/blog/post/{post.pk}/change/")
    group = page.locator("#post_authors-group")
    rows = group.locator("tr.form-row:not(.empty-form)")
    before = rows.count()
    group.locator(".add-row a").click()  # inlines.js adds a row
    expect(rows).to_have_count(before + 1)
    rows.last.locator(".select2-selection").click()  # autocomplete.js opens select2
    page.locator(".select2-search__field").fill("Zelda")
    option = page.locator(".select2-results__option", has_text="Zelda Quill")
    expect(option).to_be_visible()  # the autocomplete view answered
    option.click()
    expect(rows.last.locator(".select2-selection__rendered")).to_contain_text("Zelda Quill")
    page.locator("input[name=_continue]").click()  # form-action 'self' lets the form post
    expect(page.locator(".messagelist")).to_contain_text("was changed successfully")
    assert "Zelda Quill" in [a.name for a in post.ordered_authors()]
    assert violations(page) == []


def test_the_newsroom_shows_no_violation(live_server, strict_page, django_user_model):
    """The admin's front page (issue 26): its stylesheet is a file, and it has no inline script or style."""
    from tests.newsroom.conftest import in_review, populate

    chief = django_user_model.objects.create_superuser("chief", "chief@example.org", PASSWORD)
    populate(3, chief, chief)
    in_review("post", chief, hours_ago=49)
    page = strict_page
    page.goto(live_server.url + "/admin/login/")
    page.fill("#id_username", "chief")
    page.fill("#id_password", PASSWORD)
    page.get_by_role("button", name="Log in").click()
    response = page.goto(live_server.url + "/admin/")
    assert "style-src 'self'" in response.headers["content-security-policy"]
    expect(page.get_by_role("heading", name="Waiting for review")).to_be_visible()
    assert page.locator(".newsroom-overdue").count() == 1  # the stylesheet's rule applies: 49 h > 48 h
    assert page.locator(".newsroom-overdue th").evaluate("e => getComputedStyle(e).backgroundColor") != "rgba(0, 0, 0, 0)"
    assert violations(page) == []
