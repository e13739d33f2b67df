from django.urls import include, path

from . import views

app_name = "newsletters"

urlpatterns = [
    path("subscribe/", views.subscribe, name="subscribe"),
    path("confirm/<str:token>/", views.confirm, name="confirm"),
    path("manage/<str:token>/", views.manage, name="manage"),
    path("unsubscribe/<str:token>/", views.unsubscribe, name="unsubscribe"),
    # django-anymail's tracking webhooks: hard bounces and complaints suppress addresses (newsletters/tracking.py).
    path("anymail/", include("anymail.urls")),
]
