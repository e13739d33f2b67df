from django.urls import path

from . import views

app_name = "ingestion"

urlpatterns = [
    path("webhooks/github", views.github_webhook, name="github-webhook"),
]
