"""``![alt](image:ID)``: a <picture> from our renderer only; nothing an untrusted text writes can look like one."""
import re

import pytest

from publishing.image_refs import sanitize_picture
from publishing.rendering import image_ids, render_github_markdown, render_markdown

from .conftest import picture_bytes

pytestmark = pytest.mark.django_db


def test_a_ready_image_is_a_picture_with_avif_and_webp_sources_and_a_fallback(upload):
    image, = upload({"chart.jpg": picture_bytes("JPEG", size=(2000, 1000))})
    html = render_markdown(f"Before ![A chart of merges](image:{image.pk}) after", images=True, eager=0)
    picture = re.search(r"<picture>.*</picture>", html).group(0)
    assert re.findall(r'<source type="([^"]+)"', picture) == ["image/avif", "image/webp"]
    assert picture.count(" 480w, ") == 3 and picture.count(" 1440w") == 3  # three widths in each srcset
    assert 'sizes="(max-width: 44rem) 100vw, 44rem"' in picture
    img = re.search(r"<img [^>]*>", picture).group(0)
    assert 'alt="A chart of merges"' in img and 'width="1440" height="720"' in img
    assert 'loading="lazy"' in img and 'decoding="async"' in img
    assert re.search(r'src="/media/[0-9a-f]{64}/v1-960\.jpg"', img)


def test_only_the_first_images_load_eagerly(upload):
    first, second = upload({"a.png": picture_bytes(), "b.png": picture_bytes(color="red")})
    html = render_markdown(f"![a](image:{first.pk})\n\n![b](image:{second.pk})", images=True, eager=1)
    loading = re.findall(r"<img [^>]*>", html)
    assert 'loading="lazy"' not in loading[0] and 'loading="lazy"' in loading[1]


def test_an_empty_alt_uses_the_images_own_and_alt_text_is_escaped(upload):
    image, = upload(alts=['Quotes " and <tags>'])
    html = render_markdown(f"![](image:{image.pk})", images=True)
    assert 'alt="Quotes &quot; and &lt;tags&gt;"' in html


def test_an_image_not_ready_yet_shows_its_fallback_at_once(upload, client):
    image, = upload(ready=False)
    html = render_markdown(f"![x](image:{image.pk})", images=True)
    assert "<picture>" not in html
    src = re.search(r'<img src="([^"]+)" alt="x" width="1440" height="810"', html).group(1)
    assert client.get(src).status_code == 200  # stored at upload: never a broken image


def test_an_image_alone_with_a_caption_is_a_figure(upload):
    image, = upload(caption="Merges per week", credit="Chart: RepoJournal")
    html = render_markdown(f"Intro\n\n![](image:{image.pk})\n\nInline ![x](image:{image.pk}) too", images=True)
    assert "<p><figure" not in html  # a figure cannot sit inside a paragraph
    assert re.search(r'<figure class="image"><picture>.*</picture><figcaption>Merges per week '
                     r'<span class="credit">Chart: RepoJournal</span></figcaption></figure>', html)
    assert re.search(r"<p>Inline <picture>.*</picture> too</p>", html)


def test_unknown_ids_print_their_alt_text_and_nothing_else():
    html = render_markdown('![a <b>missing</b> "one"](image:999999)', images=True)
    assert html == '<p>a &lt;b&gt;missing&lt;/b&gt; "one"</p>\n'  # text: its markup printed, never live


HOSTILE = [
    '<picture><source srcset="https://evil.example/x.png 1x"><img src="https://evil.example/y.png"></picture>',
    '<img src="/media/x.png" srcset="https://evil.example/x.png 2x" loading="lazy" onerror="alert(1)">',
    '<source type="image/avif" srcset="javascript:alert(1)">',
    "rjimage0000000000000000n0x",  # a guess at the marker
]


@pytest.mark.parametrize("body", HOSTILE)
def test_raw_html_cannot_smuggle_a_picture_or_a_srcset(upload, body):
    image, = upload()
    html = render_markdown(f"{body}\n\n![ok](image:{image.pk})", images=True)
    assert html.count("<picture>") == 1 and html.count("<source") == 2  # ours alone
    assert 'srcset="https://evil' not in html and "javascript" not in html and "onerror" not in html
    assert "loading" not in html.split("<picture>")[0]  # a plain <img> keeps only the body allow-list's attributes


@pytest.mark.parametrize("render", [
    lambda text: render_markdown(text), lambda text: render_github_markdown(text),
], ids=["feed-entry", "pull-request-body"])
def test_texts_from_strangers_show_no_stored_image(upload, render):
    """Feed entries and PR bodies are rendered without images: ``image:ID`` is no URL there."""
    image, = upload()
    html = render(f"![x](image:{image.pk})")
    assert "<picture" not in html and "/media/" not in html and 'alt="x"' in html


def test_the_picture_allow_list_keeps_exactly_what_the_renderer_emits():
    kept = sanitize_picture(
        '<figure class="image" style="x" onclick="y"><picture><source type="image/avif" srcset="/a 1w" sizes="1px" '
        'media="print"><img src="/a" srcset="/a 1w" sizes="1px" alt="a" width="1" height="1" loading="lazy" '
        'decoding="async" onload="z" class="c"></picture><figcaption>c <span class="credit">d</span>'
        '<script>alert(1)</script></figcaption></figure>')
    assert kept == ('<figure class="image"><picture><source type="image/avif" srcset="/a 1w" sizes="1px">'
                    '<img src="/a" srcset="/a 1w" sizes="1px" alt="a" width="1" height="1" loading="lazy" '
                    'decoding="async"></picture><figcaption>c <span class="credit">d</span></figcaption></figure>')
    assert "srcset" not in sanitize_picture('<img src="/a" srcset="/a 1w, javascript:alert(1) 2w">')
    assert "srcset" not in sanitize_picture('<img src="/a" srcset="//evil.example/a 1w">')


def test_image_ids_are_what_the_renderer_shows():
    text = "![a](image:3) `![b](image:4)` [![c](image:5)](https://x.example)\n\n    ![d](image:6)\n\n![e](image:3)"
    assert image_ids(text) == [3, 5, 3]
