from django.urls import include, path

app_name = "newsletters"

urlpatterns = [
    # django-anymail's tracking webhooks: hard bounces and complaints suppress addresses (newsletters/tracking.py).
    path("anymail/", include("anymail.urls")),
]
