from django.urls import path

from . import views

app_name = "editbar"

urlpatterns = [
    path("purge/<str:kind>/<int:pk>/", views.purge, name="purge"),
]
