"""The site's URLs plus the baseline view; only benchmark settings point ROOT_URLCONF here."""
from django.urls import path

from repojournal.urls import handler404, handler500, urlpatterns as site_urlpatterns  # noqa: F401

from .views import baseline

urlpatterns = [path("bench/baseline/", baseline, name="bench-baseline"), *site_urlpatterns]
