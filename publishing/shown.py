"""What a response shows, noted by the view that loaded it.

Whoever keeps copies of public pages (the edge app: ``Surrogate-Key`` headers)
needs to know which posts, digests, tags... a page printed, so that a change to
one of them drops exactly the pages showing it. Views know that already -- they
loaded the objects -- so they note them here instead of anyone querying again.
The content apps never import the edge app: it reads ``request.shown``.
"""


def shows(request, *things) -> None:
    """Note model instances (or iterables of them: a page of cards, a list) this response prints."""
    try:
        request.shown.extend(things)
    except AttributeError:
        request.shown = list(things)
