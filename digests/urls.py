from django.urls import path

from . import views

app_name = "digests"

urlpatterns = [
    path("wire/<slug:slug>/", views.digest_detail, name="detail"),
    path("topics/<slug:slug>/", views.topic_detail, name="topic"),
    path("repos/<str:owner>/<str:name>/", views.repository_detail, name="repository"),
    path("preview/digests/<int:pk>/", views.digest_preview, name="preview"),
]
