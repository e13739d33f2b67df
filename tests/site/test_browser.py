"""Real browser journeys (Playwright driving Debian's Chromium) and axe-core accessibility checks.

Chromium is installed by the ``chromium_path`` fixture when missing; the
browser never leaves the machine: GitHub link targets are answered locally.
"""
from pathlib import Path

import pytest
from playwright.sync_api import expect, sync_playwright

from .conftest import CHROMIUM_ARGS
from .seed_fixtures import build_seed_digest

#: The copy the edit bar serves (static/vendor/axe-core/, with its licence and provenance).
AXE = Path(__file__).resolve().parents[2] / "static" / "vendor" / "axe-core" / "axe.min.js"
BLOCKING_IMPACTS = {"serious", "critical"}


@pytest.fixture
def browser(chromium_path, monkeypatch):
    # Playwright's sync API runs an event loop in this thread; the ORM calls the tests make are still synchronous.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    # axe is injected as an inline script, which the site's Content-Security-Policy refuses;
    # tests/site/test_browser_csp.py drives pages with the policy in force.
    context = browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)
    page = context.new_page()
    yield page
    context.close()


@pytest.fixture
def reader_site(transactional_db, site):
    """The shared site fixture plus a seed digest, committed so the live server sees it."""
    digest, _seed = build_seed_digest("000")
    return site, digest


def axe_violations(page) -> list[dict]:
    page.add_script_tag(path=str(AXE))
    results = page.evaluate("async () => await axe.run(document, {resultTypes: ['violations']})")
    return [
        {"id": v["id"], "impact": v["impact"], "nodes": [n["target"] for n in v["nodes"]][:5]}
        for v in results["violations"] if v["impact"] in BLOCKING_IMPACTS
    ]


def test_reader_goes_home_then_digest_then_a_reference_link_target(live_server, page, reader_site, artifacts_dir):
    site, digest = reader_site
    github_hits = []

    def answer_github(route):
        github_hits.append(route.request.url)
        route.fulfill(status=200, content_type="text/html", body="<!doctype html><title>GitHub stub</title><h1>PR</h1>")

    page.route("https://github.com/**", answer_github)
    page.goto(live_server.url + "/")
    page.screenshot(path=str(artifacts_dir / "journey1-home.png"), full_page=True)
    page.get_by_role("link", name=digest.headline).first.click()
    expect(page).to_have_url(live_server.url + digest.get_absolute_url())
    expect(page.get_by_role("heading", level=1)).to_have_text(digest.headline)

    page.locator(".summary a.citation", has_text="[1]").first.click()
    expect(page).to_have_url(live_server.url + digest.get_absolute_url() + "#ref-1")
    target = page.locator("#ref-1")
    expect(target).to_be_in_viewport()
    assert page.evaluate("document.querySelector(':target').id") == "ref-1"
    page.screenshot(path=str(artifacts_dir / "journey1-digest-ref-1.png"))

    reference = digest.digest_references.get(number=1).reference
    target.get_by_role("link", name=reference.title).click()
    expect(page).to_have_url(reference.url)
    expect(page.get_by_role("heading", level=1)).to_have_text("PR")
    assert github_hits == [reference.url]


def test_reader_goes_home_then_post_then_tag_then_author(live_server, page, reader_site, artifacts_dir):
    site, _digest = reader_site
    post = site.posts[1]  # "RL with torch.compile": tags cuda, rl; by Jiani Wang and Edward Yang
    page.goto(live_server.url + "/")
    page.get_by_role("link", name=post.title).first.click()
    expect(page).to_have_url(live_server.url + post.get_absolute_url())
    expect(page.locator(".post-body pre code .n, .post-body pre code span").first).to_be_visible()  # highlighted code
    page.screenshot(path=str(artifacts_dir / "journey2-post.png"), full_page=True)

    page.locator("article.post .tags").get_by_role("link", name="rl", exact=True).click()
    expect(page).to_have_url(live_server.url + "/tags/rl/")
    expect(page.get_by_role("heading", level=1)).to_have_text("rl")
    page.screenshot(path=str(artifacts_dir / "journey2-tag.png"), full_page=True)

    page.get_by_role("link", name="Edward Yang (@ezyang)").first.click()
    expect(page).to_have_url(live_server.url + "/authors/edward-yang/")
    expect(page.locator(".bio")).to_have_text("Works on PyTorch.")
    expect(page.get_by_role("link", name=post.title, exact=True)).to_be_visible()  # co-authored posts are listed
    page.screenshot(path=str(artifacts_dir / "journey2-author.png"), full_page=True)


def test_pages_have_no_serious_or_critical_accessibility_violations(live_server, page, reader_site, artifacts_dir):
    site, digest = reader_site
    pages = {"home": "/", "digest": digest.get_absolute_url(), "post": site.posts[1].get_absolute_url(),
             "tag": "/tags/cuda/", "author": "/authors/edward-yang/", "wire": "/wire/", "repository": "/repos/pytorch/pytorch/"}
    found = {}
    for name, path in pages.items():
        page.goto(live_server.url + path)
        found[name] = axe_violations(page)
    assert found == {name: [] for name in pages}


def test_axe_reports_what_it_should(page):
    """A page with an unlabelled input and an image without alt text must fail, or the check above proves nothing."""
    page.set_content('<!doctype html><html lang="en"><title>x</title><main><img src="a.png"><input></main></html>')
    assert {v["id"] for v in axe_violations(page)} >= {"image-alt", "label"}


def test_pages_work_on_a_phone_without_javascript(live_server, browser, reader_site, artifacts_dir):
    site, digest = reader_site
    context = browser.new_context(viewport={"width": 375, "height": 740}, java_script_enabled=False)
    page = context.new_page()
    page.goto(live_server.url + digest.get_absolute_url())
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 375, f"page is {width}px wide on a 375px screen"
    page.screenshot(path=str(artifacts_dir / "phone-digest.png"), full_page=True)
    page.goto(live_server.url + "/wire/")
    page.fill("#filter-repository", "pytorch/pytorch")
    page.get_by_role("button", name="Filter").click()
    expect(page).to_have_url(live_server.url + "/wire/?topic=&repository=pytorch%2Fpytorch")
    expect(page.get_by_role("heading", level=1)).to_have_text("The Wire: pytorch/pytorch")
    page.fill("#site-search-q", "headline")
    page.locator(".site-search button").click()
    expect(page.locator(".result-count")).to_contain_text("for “headline”")
    context.close()


#: Each axis label's box and font size, and the box inside the chart's frame (its border excluded).
CHART_LABELS_JS = """() => {
  const svg = document.querySelector('figure.chart svg'), frame = svg.getBoundingClientRect();
  const inner = {left: frame.left + svg.clientLeft, top: frame.top + svg.clientTop,
                 right: frame.left + svg.clientLeft + svg.clientWidth, bottom: frame.top + svg.clientTop + svg.clientHeight};
  const labels = [...svg.querySelectorAll('text')].map(text => {
    const box = text.getBoundingClientRect();
    return {text: text.textContent, size: getComputedStyle(text).fontSize, height: box.height,
            left: box.left, top: box.top, right: box.right, bottom: box.bottom};
  });
  return {inner, labels};
}"""


@pytest.mark.parametrize("width", [1280, 375])
def test_the_repository_chart_labels_are_the_same_size_inside_the_frame(live_server, browser, reader_site, width):
    """Issue 25: the chart's last label ("Nov 23, 2026") was drawn past the frame. As the browser lays
    them out, both labels have one font size and their boxes (ascent to descent) lie inside the frame."""
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.goto(live_server.url + "/repos/pytorch/pytorch/")
    found = page.evaluate(CHART_LABELS_JS)
    context.close()
    inner, (first, last) = found["inner"], found["labels"]
    assert ", 20" in last["text"]  # the last week's label, with its year
    assert first["size"] == last["size"] and abs(first["height"] - last["height"]) < 0.5
    for label in (first, last):
        assert inner["left"] <= label["left"] and label["right"] <= inner["right"], (label, inner)
        assert inner["top"] <= label["top"] and label["bottom"] <= inner["bottom"], (label, inner)
