from django import template
from django.utils.html import format_html_join

from blog.models import Author
from publishing.shown import shows

register = template.Library()


@register.simple_tag(takes_context=True)
def fediverse_creators(context, post):
    """``<meta name="fediverse:creator">`` per author who gave a fediverse address (one query, page-cached).

    Every author of the byline is noted as shown, so an author's new address purges the page at the edge.
    """
    slugs = [author["slug"] for author in (post.authors_tags or {}).get("authors", ())]
    authors = list(Author.objects.filter(slug__in=slugs).only("pk", "slug", "fediverse_address"))
    if "request" in context:
        shows(context["request"], *authors)
    order = {slug: index for index, slug in enumerate(slugs)}
    named = sorted((a for a in authors if a.fediverse_address), key=lambda a: order[a.slug])
    return format_html_join("", '<meta name="fediverse:creator" content="{}">', ((a.fediverse_address,) for a in named))
