"""Two editors on one item in a real browser (Playwright, Debian's Chromium), with the site's
Content-Security-Policy in force (issue 37, edit conflicts): a save from a form opened before
someone else's keeps both changes and says what it merged; the same field changed on both sides
brings the form back with both values side by side, and the editor's choice is what is saved; a
redraft adding references under an open digest form keeps both. Each browser context signs in
through the admin's login form, as an Editor or a Publisher; no page reports a policy violation.
The rules themselves are tested without a browser in ``test_edit_conflicts*``."""
import pytest
from django.urls import reverse
from playwright.sync_api import expect

from blog.factories import AuthorFactory, PostFactory
from digests.factories import DigestFactory, DigestReferenceFactory
from digests.models import Digest
from publishing.edit_conflicts import RESOLVE
from publishing.workflow import Status
from tests.site.conftest import artifacts_dir, chromium_path  # noqa: F401 (fixtures)
from tests.site.test_browser import browser  # noqa: F401 (a fixture)
from tests.site.test_browser_csp import RECORD_VIOLATIONS, violations

pytestmark = pytest.mark.django_db(transaction=True)  # the live server reads what the tests write


def signed_in_page(browser, live_server, user):  # noqa: F811
    """A browser context of `user`'s own (cookies apart), signed in through the admin's login form,
    recording policy violations as ``tests.site.test_browser_csp.strict_page`` does."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.add_init_script(RECORD_VIOLATIONS)
    page = context.new_page()
    page.console_csp = []
    page.on("console", lambda message: page.console_csp.append(message.text)
            if "Content Security Policy" in message.text else None)
    page.goto(live_server.url + reverse("admin:login"))
    page.fill("#id_username", user.username)
    page.fill("#id_password", "pw")  # make_staff_user's
    page.get_by_role("button", name="Log in").click()
    expect(page.locator("#user-tools")).to_contain_text(user.first_name)
    return page


@pytest.fixture
def ada(browser, live_server, editor):  # noqa: F811
    """Ada, an Editor, signed in in a browser context of her own."""
    editor.first_name, editor.last_name = "Ada", "Lovelace"
    editor.save()
    page = signed_in_page(browser, live_server, editor)
    yield page
    page.context.close()


@pytest.fixture
def bob(browser, live_server, publisher):  # noqa: F811
    """Bob, a Publisher, signed in in another browser context (cookies apart)."""
    publisher.first_name, publisher.last_name = "Bob", "Kahn"
    publisher.save()
    page = signed_in_page(browser, live_server, publisher)
    yield page
    page.context.close()


def open_change_form(page, live_server, item):
    page.goto(live_server.url + reverse(f"admin:{item._meta.app_label}_{item._meta.model_name}_change",
                                        args=[item.pk]))
    expect(page.locator("#content-main form")).to_be_visible()


def save(page):
    page.locator('input[name="_save"]').click()


def message(page, level: str):
    """The admin's message of `level` after a save (not the change form's own notes, such as presence)."""
    return page.locator(f"#content-start > ul.messagelist > li.{level}")


@pytest.fixture
def post():
    return PostFactory(status=Status.DRAFT, published_at=None, title="Old title", body="Old body",
                       excerpt="Old excerpt", authors=[AuthorFactory(name="Carol")])


def test_two_editors_changing_different_fields_both_keep_their_change(ada, bob, live_server, post):
    open_change_form(ada, live_server, post)
    open_change_form(bob, live_server, post)
    ada.fill("#id_title", "Ada's title")
    save(ada)
    expect(message(ada, "success")).to_contain_text("was changed successfully")
    bob.fill("#id_body", "Bob's body")
    save(bob)
    merged = message(bob, "warning")
    expect(merged).to_contain_text("had changed since you opened it (Ada Lovelace changed it")
    expect(merged).to_contain_text("Kept their changes to: Title; saved yours on top.")
    post.refresh_from_db()
    assert (post.title, post.body, post.excerpt) == ("Ada's title", "Bob's body", "Old excerpt")
    assert violations(ada) == [] and violations(bob) == []


def test_the_same_fields_changed_on_both_sides_show_both_and_save_what_the_editor_chose(
        ada, bob, live_server, post, artifacts_dir):  # noqa: F811
    open_change_form(ada, live_server, post)
    open_change_form(bob, live_server, post)
    ada.fill("#id_title", "Ada's title")
    ada.fill("#id_excerpt", "Ada's excerpt")
    save(ada)
    expect(message(ada, "success")).to_contain_text("was changed successfully")
    bob.fill("#id_title", "Bob's <b>title</b>")
    bob.fill("#id_excerpt", "Bob's excerpt")
    bob.fill("#id_body", "Bob's body")
    save(bob)

    expect(message(bob, "error")).to_contain_text("Not saved: Ada Lovelace changed it, last at")
    panel = bob.locator("table.edit-conflicts")
    title_row, excerpt_row = panel.locator("tr", has_text="Title"), panel.locator("tr", has_text="Excerpt")
    expect(title_row.locator("pre.edit-conflict")).to_have_text(["Bob's <b>title</b>", "Ada's title"])  # escaped
    expect(excerpt_row.locator("pre.edit-conflict")).to_have_text(["Bob's excerpt", "Ada's excerpt"])
    expect(bob.locator("#id_title")).to_have_value("Bob's <b>title</b>")  # the input intact
    expect(bob.locator("#id_body")).to_have_value("Bob's body")
    bob.screenshot(path=str(artifacts_dir / "edit-conflict-form.png"), full_page=True)
    post.refresh_from_db()
    assert (post.title, post.excerpt, post.body) == ("Ada's title", "Ada's excerpt", "Old body")  # nothing applied

    bob.check(f'input[name="{RESOLVE}title"][value="theirs"]')  # take theirs
    bob.fill("#id_excerpt", "Ada's and Bob's excerpt")  # edit, keeping "mine"
    save(bob)
    expect(message(bob, "success")).to_contain_text("was changed successfully")
    post.refresh_from_db()
    assert (post.title, post.excerpt, post.body) == ("Ada's title", "Ada's and Bob's excerpt", "Bob's body")
    assert violations(ada) == [] and violations(bob) == []


@pytest.fixture
def digest():
    digest = DigestFactory(status=Status.DRAFT, published_at=None, summary="Shipped [1].", body="")
    DigestReferenceFactory(digest=digest, number=1)
    return digest


def test_a_digest_keeps_the_editors_text_and_the_references_a_redraft_added(ada, live_server, digest):
    open_change_form(ada, live_server, digest)
    DigestReferenceFactory(digest=digest, number=2)  # what a redraft does: new references, a body citing them
    Digest.objects.filter(pk=digest.pk).update(body="Also [2].")
    ada.fill("#id_summary", "Shipped, the editor says [1].")
    save(ada)
    expect(message(ada, "warning")).to_contain_text(
        "had changed since you opened it (it was changed by a process that records no author")
    expect(message(ada, "warning")).to_contain_text("Kept their changes to: Body; saved yours on top.")
    digest.refresh_from_db()
    assert (digest.summary, digest.body) == ("Shipped, the editor says [1].", "Also [2].")
    assert sorted(digest.digest_references.values_list("number", flat=True)) == [1, 2]
    assert violations(ada) == []

