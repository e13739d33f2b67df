"""schema.org JSON-LD for reader pages: NewsArticle, FAQPage, BlogPosting, BreadcrumbList.

Built as plain dicts here and serialised by the ``json_ld`` template tag, which
escapes ``<``, ``>`` and ``&`` so no string in the data can close the script.
"""
from django.conf import settings
from django.contrib.staticfiles import finders
from django.core.exceptions import ImproperlyConfigured
from django.templatetags.static import PrefixNode

PUBLISHER = {"@type": "Organization", "name": "RepoJournal"}
LOGO = "img/logo.svg"


def absolute(path: str) -> str:
    """`path` on SITE_URL; absolute URLs pass through."""
    return path if path.startswith(("http://", "https://")) else f"{settings.SITE_URL}{path}"


def logo_url() -> str:
    """The logo's unfingerprinted static URL, its source found by the staticfiles finders.

    Not ``static()``: production's manifest storage answers that only after ``collectstatic``
    (``ValueError: Missing staticfiles manifest entry``), and this runs wherever a digest or
    post is rendered for storage -- ``import_seeds``, ``migrate``'s backfills, a worker -- in
    whatever order a deployment runs its commands. The unhashed name also outlives the next
    deployment: a stored rendering keeps it, and collectstatic keeps the original beside the
    fingerprinted copy (WhiteNoise serves both). The finders make a missing or renamed logo
    an error here, as the manifest would have.
    """
    if not finders.find(LOGO):
        raise ImproperlyConfigured(f"The logo {LOGO} is in none of the static files directories.")
    return f"{PrefixNode.handle_simple('STATIC_URL')}{LOGO}"


def publisher() -> dict:
    logo = {"@type": "ImageObject", "url": absolute(logo_url())}
    return {**PUBLISHER, "url": absolute("/"), "logo": logo}


def iso_date(value) -> str | None:
    return value.isoformat() if value else None


def news_article(digest: dict, references: list[dict]) -> dict:
    """A digest as a NewsArticle citing each of its references.

    Built from plain values (see ``digests.cards``), rendered when the digest or a
    child is written and stored with the digest, never per request.
    """
    return {
        "@context": "https://schema.org",
        "@type": "NewsArticle",
        "headline": digest["headline"][:110],
        "description": digest["description"],
        "url": absolute(digest["url"]),
        "mainEntityOfPage": absolute(digest["url"]),
        "datePublished": iso_date(digest["published_at"]),
        "dateModified": iso_date(digest["updated_at"]),
        "articleSection": digest["kicker"],
        "about": {"@type": "Thing", "name": digest["topic"]},
        "author": {**PUBLISHER, "url": absolute("/")},
        "publisher": publisher(),
        "citation": [
            {
                "@type": "CreativeWork",
                "position": reference["number"],
                "name": reference["title"],
                "url": reference["url"] or absolute(reference["repository_url"]),
            }
            for reference in references
        ],
    }


def faq_page(questions: list[tuple[str, str]]) -> dict:
    return {
        "@context": "https://schema.org",
        "@type": "FAQPage",
        "mainEntity": [
            {"@type": "Question", "name": question, "acceptedAnswer": {"@type": "Answer", "text": answer}}
            for question, answer in questions
        ],
    }


def blog_posting(post) -> dict:
    """A post as a BlogPosting naming every author in byline order.

    Stored with the post when its bylines or tags change (blog/cards.py); the page adds
    ``dateModified`` from the row. URLs are absolute on SITE_URL: after changing it, run
    ``manage.py refresh_cards``.
    """
    return {
        "@context": "https://schema.org",
        "@type": "BlogPosting",
        "headline": post.title[:110],
        "description": post.display_excerpt,
        "url": absolute(post.get_absolute_url()),
        "mainEntityOfPage": absolute(post.get_absolute_url()),
        "datePublished": iso_date(post.published_at),
        "wordCount": post.word_count,
        "keywords": [tag.name for tag in post.ordered_tags()],
        "author": [
            {"@type": "Person", "name": author.name, "url": absolute(author.get_absolute_url())}
            for author in post.ordered_authors()
        ],
        "publisher": publisher(),
    }


def breadcrumb_list(crumbs: list[tuple[str, str]]) -> dict:
    return {
        "@context": "https://schema.org",
        "@type": "BreadcrumbList",
        "itemListElement": [
            {"@type": "ListItem", "position": position, "name": name, "item": absolute(url)}
            for position, (name, url) in enumerate(crumbs, start=1)
        ],
    }
