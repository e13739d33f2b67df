from django.urls import path

from . import views

app_name = "blog"

urlpatterns = [
    path("posts/<slug:slug>/", views.post_detail, name="post"),
    path("authors/<slug:slug>/", views.author_detail, name="author"),
    path("preview/posts/<int:pk>/", views.post_preview, name="preview"),
]
