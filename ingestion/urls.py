from django.urls import path

from . import views

app_name = "ingestion"

# Mounted at webhooks/ (repojournal/urls.py): the endpoint is /webhooks/github.
urlpatterns = [
    path("github", views.github_webhook, name="github-webhook"),
]
