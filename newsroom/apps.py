"""Two configurations: the newsroom app itself (its templates and static files) and the admin,
whose default site is the newsroom's (``NewsroomSite``).

``NewsroomAdminConfig`` takes the place of ``django.contrib.admin`` in INSTALLED_APPS: it is
Django's admin (same label, templates, autodiscovery), with ``admin.site`` -- which every app's
``admin.py`` registers with -- an instance of ``newsroom.sites.NewsroomSite``.
"""
from django.apps import AppConfig
from django.contrib.admin import apps as admin_apps  # the module: its AdminConfig here would be a second default


class NewsroomConfig(AppConfig):
    default = True  # what "newsroom" in INSTALLED_APPS means
    name = "newsroom"
    verbose_name = "Newsroom"


class NewsroomAdminConfig(admin_apps.AdminConfig):
    default = False
    default_site = "newsroom.sites.NewsroomSite"
