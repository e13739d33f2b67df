from django.urls import path

from . import views

app_name = "images"
urlpatterns = [path("<path:name>", views.rendition, name="rendition")]
