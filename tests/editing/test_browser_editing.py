"""Presence and autosave in a real browser (Playwright, Debian's Chromium) with the site's
Content-Security-Policy in force (issue 37): two editors in two browser contexts see each other and
see a closed tab leave; a page closed while its editor typed is offered back in another browser and
saved from there; a session that ended while the editor wrote loses nothing once they sign in again.
No page reports a policy violation. The rules themselves are tested without a browser beside this."""
import re

import pytest
from django.contrib.sessions.models import Session
from django.urls import reverse
from playwright.sync_api import expect

from blog.models import Post
from editing.models import Autosave
from tests.site.conftest import artifacts_dir, chromium_path  # noqa: F401 (fixtures)
from tests.site.test_browser import browser  # noqa: F401 (a fixture)
from tests.site.test_browser_csp import RECORD_VIOLATIONS, violations

from .conftest import url_of

pytestmark = pytest.mark.django_db(transaction=True)  # the live server reads what the tests write


@pytest.fixture(autouse=True)
def quick_beats(settings):
    """A beat a second (not 30), so the tests wait for seconds, not minutes."""
    settings.EDITING_PRESENCE_HEARTBEAT_SECONDS = 1


def new_page(browser):  # noqa: F811
    """A browser context of its own (cookies apart), recording policy violations as ``strict_page`` does."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.add_init_script(RECORD_VIOLATIONS)
    page = context.new_page()
    page.console_csp = []
    page.on("console", lambda message: page.console_csp.append(message.text)
            if "Content Security Policy" in message.text else None)
    return page


def sign_in(page, user):
    page.fill("#id_username", user.username)
    page.fill("#id_password", "pw")  # make_staff_user's
    page.get_by_role("button", name="Log in").click()
    expect(page.locator("#user-tools")).to_contain_text(re.compile(user.first_name, re.IGNORECASE))


def signed_in_page(browser, live_server, user):  # noqa: F811
    page = new_page(browser)
    page.goto(live_server.url + reverse("admin:login"))
    sign_in(page, user)
    return page


def open_form(page, live_server, item):
    page.goto(live_server.url + url_of(item, "change"))
    expect(page.locator("#editing-panel")).to_be_attached()


def test_two_editors_see_each_other_and_a_closed_tab_leaves(browser, live_server, post, ada, bob,
                                                             artifacts_dir):  # noqa: F811
    a, b = signed_in_page(browser, live_server, ada), signed_in_page(browser, live_server, bob)
    open_form(a, live_server, post)
    open_form(b, live_server, post)
    expect(b.locator(".editing-presence")).to_contain_text("Ada Lovelace is editing this post, since ")
    expect(a.locator(".editing-presence")).to_contain_text("Bob Kahn is editing this post, since ")
    a.screenshot(path=str(artifacts_dir / "editing-presence.png"))
    assert violations(a) == [] and violations(b) == []
    b.close(run_before_unload=True)
    expect(a.locator(".editing-presence")).to_be_hidden()


def test_a_page_closed_while_typing_is_restored_in_another_browser(browser, live_server, post, ada,
                                                                   artifacts_dir):  # noqa: F811
    first = signed_in_page(browser, live_server, ada)
    open_form(first, live_server, post)
    first.fill("#id_body", "A body typed and never saved")
    first.close(run_before_unload=True)  # at once: before the timed autosave, only the tab's beacon keeps it

    other = signed_in_page(browser, live_server, ada)
    open_form(other, live_server, post)
    offer = other.locator(".editing-autosave")
    expect(offer).to_contain_text("You have unsaved changes from")
    expect(other.locator("#id_body")).to_have_value("Old body")
    other.screenshot(path=str(artifacts_dir / "editing-autosave-offer.png"))
    offer.get_by_role("button", name="Restore").click()
    expect(other.locator("#id_body")).to_have_value("A body typed and never saved")
    expect(offer).to_be_hidden()
    other.locator('input[name="_save"]').click()
    expect(other.locator("#content-start > ul.messagelist > li.success")).to_contain_text("was changed successfully")
    assert Post.objects.get(pk=post.pk).body == "A body typed and never saved"
    assert not Autosave.objects.exists()
    assert violations(other) == []


def test_discarding_the_offer_removes_it(browser, live_server, post, ada):  # noqa: F811
    Autosave.objects.keep(ada, post, [["body", "Unwanted"]])
    page = signed_in_page(browser, live_server, ada)
    open_form(page, live_server, post)
    page.locator(".editing-autosave").get_by_role("button", name="Discard").click()
    expect(page.locator(".editing-status")).to_have_text("Unsaved changes discarded.")
    assert not Autosave.objects.exists()
    assert violations(page) == []


def test_text_typed_after_the_session_ended_is_saved_after_signing_in_again(browser, live_server, post, ada):  # noqa: F811
    page = signed_in_page(browser, live_server, ada)
    open_form(page, live_server, post)
    page.fill("#id_title", "A title from before")
    expect(page.locator(".editing-status")).to_contain_text("Unsaved changes kept at")
    Session.objects.all().delete()  # the session ends while Ada writes
    expect(page.locator(".editing-status")).to_contain_text("Your session has ended")  # the next beat says so
    page.fill("#id_body", "A body typed while signed out")
    page.locator('input[name="_save"]').click()

    expect(page.locator("#id_username")).to_be_visible()  # the save went to the sign-in page, applying nothing
    assert Post.objects.get(pk=post.pk).body == "Old body"
    sign_in(page, ada)  # and back to the form
    offer = page.locator(".editing-autosave")
    expect(offer).to_contain_text("You have unsaved changes from")
    offer.get_by_role("button", name="Restore").click()
    expect(page.locator("#id_body")).to_have_value("A body typed while signed out")
    expect(page.locator("#id_title")).to_have_value("A title from before")
    page.locator('input[name="_save"]').click()
    expect(page.locator("#content-start > ul.messagelist > li.success")).to_contain_text("was changed successfully")
    saved = Post.objects.get(pk=post.pk)
    assert (saved.title, saved.body) == ("A title from before", "A body typed while signed out")
    assert not Autosave.objects.exists()
    assert violations(page) == []
