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


class Printed:
    """A row a response printed from a ``values_list()`` query: its model and primary key.

    What ``shows`` needs of an instance, without making one (``edge.keys`` reads
    ``_meta`` and ``pk``): a repository page prints twenty digests' stored cards
    and nothing else of them.
    """

    __slots__ = ("_meta", "pk")

    def __init__(self, model, pk):
        self._meta = model._meta
        self.pk = pk


def printed(model, pks) -> list[Printed]:
    """The rows of `model` with these primary keys, as ``shows`` takes them."""
    return [Printed(model, pk) for pk in pks]
