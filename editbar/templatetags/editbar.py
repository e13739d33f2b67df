"""``{% edit_bar %}``: the staff bar, printed at the end of base.html's body (editbar/bar.py says when)."""
from django import template
from django.template.loader import render_to_string

from editbar import bar

register = template.Library()


@register.simple_tag(takes_context=True)
def edit_bar(context) -> str:
    """Nothing for readers (not even whitespace: their page is byte for byte what it was without it)."""
    request = context.get("request")
    found = bar.for_request(request)
    if found is None:
        return ""
    return render_to_string("editbar/bar.html", found, request=request)
