"""Composing: the page's stored HTML made fit for an inbox, the text twin, test sends."""
import re

import pytest

from blog.factories import AuthorFactory, PostFactory
from newsletters import composing, fanout
from newsletters.email_html import EMAIL_WIDTH, email_html, plain_text
from newsletters.models import Delivery, Message

PICTURE = (
    '<figure class="image"><picture>'
    '<source type="image/avif" srcset="/media/r/a-320.avif 320w, /media/r/a-1200.avif 1200w" sizes="44rem">'
    '<img src="/media/r/a-640.jpg" srcset="/media/r/a-320.jpg 320w, /media/r/a-480.jpg 480w, '
    '/media/r/a-1200.jpg 1200w" sizes="44rem" alt="A chart &amp; more" width="1200" height="800" '
    'loading="lazy" decoding="async"></picture><figcaption>Chart</figcaption></figure>'
)


def test_a_picture_becomes_one_email_safe_img(settings):
    settings.SITE_URL = "https://news.example"
    out = email_html(PICTURE, "https://news.example/wire/x/", {})
    assert "<picture" not in out and "<source" not in out and "srcset" not in out and "avif" not in out
    [img] = re.findall(r"<img [^>]*>", out)
    assert 'src="https://news.example/media/r/a-480.jpg"' in img
    assert 'width="480"' in img and 'height="320"' in img and 'alt="A chart &amp; more"' in img
    assert all(int(width) <= EMAIL_WIDTH for width in re.findall(r'width="(\d+)"', out))


def test_links_become_absolute_and_citations_point_at_references(settings):
    settings.SITE_URL = "https://news.example"
    stored = ('<p>Faster <a class="citation" href="#ref-1">[1]</a> and <a class="citation" href="#ref-9">[9]</a>, '
              'see <a href="/wire/">the Wire</a> &lt;script&gt;</p>')
    out = email_html(stored, "https://news.example/wire/x/", {1: "https://github.com/o/r/pull/1"})
    assert 'href="https://github.com/o/r/pull/1"' in out
    assert 'href="https://news.example/wire/x/#ref-9"' in out  # no URL known: the page's reference
    assert 'href="https://news.example/wire/"' in out and "&lt;script&gt;" in out and "<script" not in out


def test_plain_text_keeps_link_urls_and_structure():
    text = plain_text('<h2>Action items</h2><ul><li>Upgrade <a href="https://x.example/a">the tool</a></li>'
                      '<li>Wait</li></ul><p>Done.</p>')
    assert "## Action items" in text and "- Upgrade the tool <https://x.example/a>" in text and "- Wait" in text


@pytest.mark.django_db
def test_a_post_email_shows_title_authors_and_body(settings):
    settings.SITE_URL = "https://news.example"
    post = PostFactory(title="Why we rewrote it", authors=[AuthorFactory(name="Ada Lovelace")],
                       body="It was **slow**. See [docs](/blog/).", disclosure="Drafted with care.")
    message = fanout.message_for(post=post, subject=post.title, path=post.get_absolute_url())
    email = composing.compose(Delivery(message=message, email="editor@example.com"))  # a test send: no subscriber
    html = email.alternatives[0][0]
    for shown in ("Why we rewrote it", "Ada Lovelace", "<strong>slow</strong>", "Drafted with care."):
        assert shown in html
    assert 'href="https://news.example/blog/"' in html and "Ada Lovelace" in email.body
    assert "List-Unsubscribe" not in email.extra_headers
    assert email.extra_headers["Message-ID"] == f"<post.{post.pk}.test{message.pk}@{settings.NEWSLETTERS_MESSAGE_ID_DOMAIN}>"
    assert 'href="https://news.example/"' in html  # its manage/unsubscribe links go home
    assert Message.objects.count() == 1


def test_the_rewrite_never_lets_a_script_url_through():
    """The stored HTML is sanitised already; the email's rewrite of links must not be what undoes it."""
    from newsletters.email_html import email_html

    rewritten = email_html('<a href="javascript:alert(1)">x</a><a href=" JavaScript:alert(2)">y</a>'
                           '<img src="data:text/html,boom" alt="i"><a href="/blog/">ok</a>', "https://site/p/", {})
    assert "javascript" not in rewritten.lower() and "data:" not in rewritten
    assert 'href="' in rewritten and "/blog/" in rewritten
