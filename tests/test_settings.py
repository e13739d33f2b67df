"""Settings come from the environment; production refuses to start unsafely.

Each case runs Django in a fresh subprocess with exactly the environment under
test, because settings are read once at import time.
"""
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

PROJECT_DIR = Path(__file__).resolve().parent.parent
GOOD_SECRET = "k3J9x!pQ7vR2mZ8wL5tY1nB4cF6hD0sG-aE_uI"  # 38 characters, random-looking
REPORT = """
import json, django
from django.conf import settings
django.setup()
db = settings.DATABASES["default"]
print(json.dumps({
    "DEBUG": settings.DEBUG,
    "ENGINE": db["ENGINE"],
    "NAME": str(db["NAME"]),
    "HOST": db.get("HOST", ""),
    "PORT": str(db.get("PORT", "")),
    "USER": db.get("USER", ""),
    "CACHE": settings.CACHES["default"]["BACKEND"],
    "CACHE_LOCATION": str(settings.CACHES["default"].get("LOCATION", "")),
    "EAGER": settings.CELERY_TASK_ALWAYS_EAGER,
    "BROKER": settings.CELERY_BROKER_URL,
    "ALLOWED_HOSTS": settings.ALLOWED_HOSTS,
    "SITE_URL": settings.SITE_URL,
    "SESSION_COOKIE_SECURE": getattr(settings, "SESSION_COOKIE_SECURE", None),
}))
"""
VARIABLES = ("DJANGO_SECRET_KEY", "DJANGO_DEBUG", "DJANGO_ALLOWED_HOSTS", "DATABASE_URL", "REDIS_URL", "SITE_URL",
             "DJANGO_STATIC_ROOT", "DJANGO_MEDIA_ROOT", "MEDIA_S3_BUCKET", "MEDIA_S3_ENDPOINT_URL", "MEDIA_S3_CUSTOM_DOMAIN",
             "EMAIL_HOST", "EMAIL_PORT", "EMAIL_BACKEND", "EMAIL_FILE_PATH", "EMAIL_USE_TLS")


def run_django(settings_module: str, code: str = REPORT, **env) -> subprocess.CompletedProcess:
    environment = {key: value for key, value in os.environ.items() if key not in VARIABLES}
    environment.update(DJANGO_SETTINGS_MODULE=settings_module, **env)
    return subprocess.run(
        [sys.executable, "-c", code], cwd=PROJECT_DIR, env=environment, capture_output=True, text=True, timeout=60
    )


def loaded(settings_module: str, **env) -> dict:
    result = run_django(settings_module, **env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def refused(settings_module: str, **env) -> str:
    result = run_django(settings_module, **env)
    assert result.returncode != 0, result.stdout
    assert "ImproperlyConfigured" in result.stderr
    return result.stderr


# --- production -------------------------------------------------------------------------------


def test_production_refuses_to_start_without_a_secret_key():
    assert "DJANGO_SECRET_KEY" in refused("repojournal.settings.prod")


@pytest.mark.parametrize(
    "secret",
    [
        "",
        "short-key",
        "x" * 31,
        "dev-only-insecure-key-never-use-in-production",
        "test-only-insecure-key-but-it-is-long-enough-now",
        "django-insecure-" + "a1b2c3d4e5" * 5,
        "ab" * 25,  # long, but only two distinct characters
    ],
)
def test_production_refuses_placeholder_secret_keys(secret):
    assert "DJANGO_SECRET_KEY" in refused("repojournal.settings.prod", DJANGO_SECRET_KEY=secret)


@pytest.mark.parametrize("debug", ["1", "true", "True", "yes", "on"])
def test_production_refuses_debug(debug):
    stderr = refused("repojournal.settings.prod", DJANGO_SECRET_KEY=GOOD_SECRET, DJANGO_DEBUG=debug)
    assert "DJANGO_DEBUG" in stderr


def test_production_starts_with_a_real_key_and_debug_off():
    settings = loaded("repojournal.settings.prod", DJANGO_SECRET_KEY=GOOD_SECRET, DJANGO_DEBUG="0")
    assert settings["DEBUG"] is False
    assert settings["SESSION_COOKIE_SECURE"] is True


def test_production_passes_django_system_checks():
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=PROJECT_DIR,
        env={
            **{key: value for key, value in os.environ.items() if key not in VARIABLES},
            "DJANGO_SETTINGS_MODULE": "repojournal.settings.prod",
            "DJANGO_SECRET_KEY": GOOD_SECRET,
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "no issues" in result.stdout


def test_wsgi_defaults_to_production_settings():
    code = "import os, repojournal.wsgi; print(os.environ['DJANGO_SETTINGS_MODULE'])"
    environment = {key: value for key, value in os.environ.items() if key not in VARIABLES + ("DJANGO_SETTINGS_MODULE",)}
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=PROJECT_DIR, env=environment, capture_output=True, text=True, timeout=60
    )
    assert result.returncode != 0 and "DJANGO_SECRET_KEY" in result.stderr  # no key: it refuses, as production should
    environment["DJANGO_SECRET_KEY"] = GOOD_SECRET
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=PROJECT_DIR, env=environment, capture_output=True, text=True, timeout=60
    )
    assert result.stdout.strip() == "repojournal.settings.prod", result.stderr


STATIC_REPORT = """
import json, django
from django.conf import settings
django.setup()
print(json.dumps({"storage": settings.STORAGES["staticfiles"]["BACKEND"], "root": str(settings.STATIC_ROOT)}))
"""


def test_production_fingerprints_and_gzips_static_files_and_development_does_not(tmp_path):
    """Issue 25: hashed names (immutable for a year) and .gz copies in production; `make run` and the tests
    serve static/ as it is, with no collectstatic to run first."""
    def static_settings(module: str, **env) -> dict:
        result = run_django(module, STATIC_REPORT, **env)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout.strip().splitlines()[-1])

    production = static_settings("repojournal.settings.prod", DJANGO_SECRET_KEY=GOOD_SECRET,
                                 DJANGO_STATIC_ROOT=str(tmp_path))
    assert production == {"storage": "whitenoise.storage.CompressedManifestStaticFilesStorage", "root": str(tmp_path)}
    development = static_settings("repojournal.settings.dev")
    assert development == {"storage": "django.contrib.staticfiles.storage.StaticFilesStorage",
                           "root": str(PROJECT_DIR / "staticfiles")}


IMAGES_REPORT = """
import json, django
from django.conf import settings
django.setup()
print(json.dumps({alias: [settings.STORAGES[alias]["BACKEND"], {key: str(value) for key, value in
                  settings.STORAGES[alias].get("OPTIONS", {}).items()}] for alias in ("images", "image_originals")}
                 | {"img-src": settings.CONTENT_SECURITY_POLICY["DIRECTIVES"]["img-src"],
                    "upload": settings.FILE_UPLOAD_HANDLERS[0]}))
"""


def images_settings(module: str, **env) -> dict:
    result = run_django(module, IMAGES_REPORT, **env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_images_are_on_disk_by_default_and_originals_apart_from_renditions(tmp_path):
    """Issue 26: `make run` (and `make up` without a bucket) keep renditions in MEDIA_ROOT, originals elsewhere."""
    found = images_settings("repojournal.settings.dev", DJANGO_MEDIA_ROOT=str(tmp_path))
    assert found["images"] == ["django.core.files.storage.FileSystemStorage",
                               {"location": str(tmp_path), "base_url": "/media/"}]
    assert found["image_originals"] == ["django.core.files.storage.FileSystemStorage",
                                        {"location": str(PROJECT_DIR / "var" / "originals")}]
    assert found["upload"] == "images.uploads.LimitedUploadHandler"
    assert not any(source.startswith("http:") for source in found["img-src"])


def test_a_bucket_in_the_environment_moves_images_to_s3_in_production():
    found = images_settings("repojournal.settings.prod", DJANGO_SECRET_KEY=GOOD_SECRET, MEDIA_S3_BUCKET="pictures",
                            MEDIA_S3_ENDPOINT_URL="http://10.1.2.3:9000", MEDIA_S3_REGION="eu-west-1")
    backend, options = found["images"]
    assert backend == "storages.backends.s3.S3Storage"
    assert (options["bucket_name"], options["endpoint_url"], options["location"], options["querystring_auth"]) == (
        "pictures", "http://10.1.2.3:9000", "renditions", "False")
    assert "immutable" in options["object_parameters"]
    assert found["image_originals"][1]["location"] == "originals"
    assert found["image_originals"][1]["querystring_auth"] == "True"  # never a public URL
    assert "http://10.1.2.3:9000" in found["img-src"]


# --- the environment switches -----------------------------------------------------------------


def test_local_defaults_are_sqlite_a_shared_file_cache_and_inline_tasks():
    """`make run`'s two processes (server, scheduler) share one cache: a folder, not each one's memory."""
    settings = loaded("repojournal.settings.dev")
    assert settings["ENGINE"] == "django.db.backends.sqlite3"
    assert settings["NAME"] == str(PROJECT_DIR / "db.sqlite3")
    assert settings["CACHE"] == "django.core.cache.backends.filebased.FileBasedCache"
    assert settings["CACHE_LOCATION"] == str(PROJECT_DIR / "db.sqlite3-cache")  # goes with the database
    elsewhere = loaded("repojournal.settings.dev", DATABASE_URL="sqlite:////tmp/other.sqlite3")
    assert elsewhere["CACHE_LOCATION"] == "/tmp/other.sqlite3-cache"
    assert settings["EAGER"] is True
    assert settings["DEBUG"] is True
    assert settings["ALLOWED_HOSTS"] == ["localhost", "127.0.0.1", "[::1]"]


def test_database_url_switches_to_postgresql():
    settings = loaded(
        "repojournal.settings.dev", DATABASE_URL="postgres://journal:secret@db.internal:6543/repojournal"
    )
    assert settings["ENGINE"] == "django.db.backends.postgresql"
    assert (settings["NAME"], settings["HOST"], settings["PORT"], settings["USER"]) == (
        "repojournal", "db.internal", "6543", "journal"
    )


def test_database_url_switches_production_too():
    settings = loaded(
        "repojournal.settings.prod", DJANGO_SECRET_KEY=GOOD_SECRET, DATABASE_URL="postgres://postgres@127.0.0.1:5432/x"
    )
    assert (settings["ENGINE"], settings["NAME"]) == ("django.db.backends.postgresql", "x")


def test_redis_url_switches_cache_and_broker():
    settings = loaded("repojournal.settings.dev", REDIS_URL="redis://127.0.0.1:6379/5")
    assert settings["CACHE"] == "reader.cache_backend.RedisCache"  # Django's, reusing its redis clients
    assert settings["BROKER"] == "redis://127.0.0.1:6379/5"
    assert settings["EAGER"] is False


def test_hosts_and_site_url_from_the_environment():
    settings = loaded(
        "repojournal.settings.dev",
        DJANGO_ALLOWED_HOSTS=" repojournal.example, www.repojournal.example ,,",
        SITE_URL="https://repojournal.example/",
    )
    assert settings["ALLOWED_HOSTS"] == ["repojournal.example", "www.repojournal.example"]
    assert settings["SITE_URL"] == "https://repojournal.example"


def test_dev_debug_can_be_turned_off():
    assert loaded("repojournal.settings.dev", DJANGO_DEBUG="false")["DEBUG"] is False


def test_navigation_links_are_the_reversed_urls(rf):
    from django.urls import reverse

    from django.templatetags.static import static

    from publishing.context_processors import ASSETS, NAVIGATION, navigation

    links = navigation(rf.get("/"))["links"]
    assert links == {key: reverse(name) for key, name in NAVIGATION.items()} | {
        key: static(path) for key, path in ASSETS.items()}
    assert links["wire"] == "/wire/" and links["stylesheet"] == "/static/css/site.css"


def test_the_suite_uses_a_celery_queue_of_its_own():
    """A worker on the same Redis database (`make worker`, another checkout) must not take the suite's tasks."""
    from django.conf import settings

    from repojournal.celery import app

    assert settings.CELERY_TASK_DEFAULT_QUEUE.startswith("repojournal-test-")
    assert app.conf.task_default_queue == settings.CELERY_TASK_DEFAULT_QUEUE != "celery"


# --- the worker: README's command, nothing else set -------------------------------------------


def _celery(*arguments: str, **env) -> subprocess.CompletedProcess:
    """The `celery` command exactly as README.md and docs/operations.md give it, in an environment
    without DJANGO_SETTINGS_MODULE or a secret key (a fresh checkout)."""
    environment = {key: value for key, value in os.environ.items() if key not in VARIABLES + ("DJANGO_SETTINGS_MODULE",)}
    environment.update(env)
    celery = str(Path(sys.executable).with_name("celery"))
    return subprocess.run(
        [celery, "-A", "repojournal", *arguments], cwd=PROJECT_DIR, env=environment, capture_output=True, text=True, timeout=60
    )


def test_worker_command_defaults_to_development_settings():
    result = _celery("report")
    assert result.returncode == 0, result.stderr
    assert "repojournal.settings.dev" in result.stdout  # the Django fixup reports the settings module


def test_worker_command_honours_an_explicit_settings_module():
    result = _celery("report", DJANGO_SETTINGS_MODULE="repojournal.settings.prod")
    assert result.returncode != 0 and "DJANGO_SECRET_KEY" in result.stderr  # production still refuses without a key


@pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="boots a real worker: needs REDIS_URL")
def test_readme_worker_command_boots(tmp_path):
    """`celery -A repojournal worker -B` starts and reports ready (on its own queue and beat file)."""
    environment = {key: value for key, value in os.environ.items() if key not in VARIABLES + ("DJANGO_SETTINGS_MODULE",)}
    environment["REDIS_URL"] = os.environ["REDIS_URL"]
    celery = str(Path(sys.executable).with_name("celery"))
    command = [celery, "-A", "repojournal", "worker", "-B", "--pool=solo", "--loglevel=info",
               "-Q", f"boot-test-{os.getpid()}", "--schedule", str(tmp_path / "beat-schedule")]
    worker = subprocess.Popen(command, cwd=PROJECT_DIR, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    watchdog = threading.Timer(60, worker.kill)  # a worker that never says "ready" fails, not hangs
    watchdog.start()
    try:
        for line in worker.stdout:
            lines.append(line)
            if " ready." in line or worker.poll() is not None or len(lines) > 400:
                break
    finally:
        watchdog.cancel()
        worker.terminate()
        worker.wait(timeout=30)
    assert any(" ready." in line for line in lines), "".join(lines)


EMAIL_REPORT = """
import json
import django
from django.conf import settings
django.setup()
print(json.dumps({name: str(getattr(settings, name)) for name in (
    "EMAIL_BACKEND", "EMAIL_HOST", "EMAIL_PORT", "EMAIL_USE_TLS", "EMAIL_FILE_PATH")}))
"""


@pytest.mark.parametrize("module", ["repojournal.settings.dev", "repojournal.settings.prod"])
def test_email_host_sends_over_smtp_whatever_the_settings_module_and_else_mail_goes_to_files(module):
    """Issue 27: EMAIL_HOST (with Django's other EMAIL_* names) means SMTP there, `make run` included;
    without it, each email is a file in var/mail/ where a developer reads it."""
    def email_settings(**env):
        result = run_django(module, EMAIL_REPORT, DJANGO_SECRET_KEY=GOOD_SECRET, **env)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout.strip().splitlines()[-1])

    smtp = email_settings(EMAIL_HOST="smtp.example.net", EMAIL_PORT="2525", EMAIL_USE_TLS="1")
    assert (smtp["EMAIL_BACKEND"], smtp["EMAIL_HOST"], smtp["EMAIL_PORT"], smtp["EMAIL_USE_TLS"]) == (
        "django.core.mail.backends.smtp.EmailBackend", "smtp.example.net", "2525", "True")
    files = email_settings()
    assert files["EMAIL_BACKEND"] == "django.core.mail.backends.filebased.EmailBackend"
    assert files["EMAIL_FILE_PATH"] == str(PROJECT_DIR / "var" / "mail")
