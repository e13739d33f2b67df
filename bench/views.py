"""The baseline: the least a Django view can do, served through the same stack as every target."""
from django.http import HttpResponse


def baseline(request):
    return HttpResponse(b"ok", content_type="text/plain")
