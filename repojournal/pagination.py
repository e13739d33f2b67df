"""Pagination for reader listings: a bad ``?page=`` is a 404, never a 500 or a silent page 1."""
from django.core.paginator import InvalidPage, Page, Paginator
from django.http import Http404

PER_PAGE = 20


def paginate(request, queryset, per_page: int = PER_PAGE) -> Page:
    """The requested page of `queryset`: two queries (count, rows) whatever its size."""
    paginator = Paginator(queryset, per_page, allow_empty_first_page=True)
    try:
        return paginator.page(request.GET.get("page") or 1)
    except InvalidPage as error:
        raise Http404(f"No such page: {error}") from error
