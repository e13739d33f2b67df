"""Images (issue 26, images/; docs/deployment.md "Images"), read from the environment; base.py imports it.

Two storages: "images" holds the renditions readers load (public, named by content hash, immutable),
"image_originals" the files as uploaded (private: only staff see them, through the admin). On disk by
default (`make run`; `make up` on one machine); in an S3-compatible bucket once MEDIA_S3_BUCKET is set,
so every app server sees the same files (django-storages; credentials from boto3's usual sources:
AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY in the environment, or the machine's role).
"""
import os
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent.parent

MEDIA_ROOT = Path(os.environ.get("DJANGO_MEDIA_ROOT") or BASE_DIR / "media")
MEDIA_URL = "/media/"
IMAGES_ORIGINALS_ROOT = Path(os.environ.get("IMAGES_ORIGINALS_ROOT") or BASE_DIR / "var" / "originals")
MEDIA_S3_BUCKET = os.environ.get("MEDIA_S3_BUCKET", "")
MEDIA_S3_ENDPOINT_URL = os.environ.get("MEDIA_S3_ENDPOINT_URL", "")  # empty: AWS itself
MEDIA_S3_REGION = os.environ.get("MEDIA_S3_REGION", "")
MEDIA_S3_CUSTOM_DOMAIN = os.environ.get("MEDIA_S3_CUSTOM_DOMAIN", "")  # a CDN in front of the bucket
# A canned ACL for renditions (e.g. public-read) where the bucket uses ACLs; by default none is sent
# and a bucket policy makes renditions/* public (docs/deployment.md).
MEDIA_S3_RENDITIONS_ACL = os.environ.get("MEDIA_S3_RENDITIONS_ACL", "")
#: Cache-Control of a rendition: its name carries the original's content hash, so it never changes.
IMAGES_IMMUTABLE = "public, max-age=31536000, immutable"
IMAGES_MAX_UPLOAD_BYTES = int(os.environ.get("IMAGES_MAX_UPLOAD_BYTES", str(20 * 1024 * 1024)))
IMAGES_MAX_PIXELS = int(os.environ.get("IMAGES_MAX_PIXELS", str(50_000_000)))
# Uploads stream through the first handler: a file past IMAGES_MAX_UPLOAD_BYTES is dropped as it arrives.
FILE_UPLOAD_HANDLERS = [
    "images.uploads.LimitedUploadHandler",
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "django.core.files.uploadhandler.TemporaryFileUploadHandler",
]
# Beat re-queues renditions whose task was lost (a worker killed, the broker away at upload).
IMAGES_SWEEP_AFTER = int(os.environ.get("IMAGES_SWEEP_AFTER", "120"))


def image_storages() -> dict:
    """The "images" and "image_originals" entries of STORAGES, from the settings above."""
    if not MEDIA_S3_BUCKET:
        filesystem = "django.core.files.storage.FileSystemStorage"
        return {"images": {"BACKEND": filesystem, "OPTIONS": {"location": MEDIA_ROOT, "base_url": MEDIA_URL}},
                "image_originals": {"BACKEND": filesystem, "OPTIONS": {"location": IMAGES_ORIGINALS_ROOT}}}
    bucket = {"bucket_name": MEDIA_S3_BUCKET, "endpoint_url": MEDIA_S3_ENDPOINT_URL or None,
              "region_name": MEDIA_S3_REGION or None, "file_overwrite": True}
    acl = {"ACL": MEDIA_S3_RENDITIONS_ACL} if MEDIA_S3_RENDITIONS_ACL else {}
    return {
        "images": {"BACKEND": "storages.backends.s3.S3Storage", "OPTIONS": {
            **bucket, "location": "renditions", "querystring_auth": False,
            "object_parameters": {"CacheControl": IMAGES_IMMUTABLE, **acl},
            "custom_domain": MEDIA_S3_CUSTOM_DOMAIN or None}},
        "image_originals": {"BACKEND": "storages.backends.s3.S3Storage", "OPTIONS": {
            **bucket, "location": "originals", "querystring_auth": True}},
    }


def images_origin() -> str:
    """Where readers load renditions from when that is not this site: the bucket's (or its CDN's) origin."""
    if not MEDIA_S3_BUCKET:
        return ""
    if MEDIA_S3_CUSTOM_DOMAIN:
        return f"https://{MEDIA_S3_CUSTOM_DOMAIN.split('/')[0]}"
    if MEDIA_S3_ENDPOINT_URL:
        scheme, _, rest = MEDIA_S3_ENDPOINT_URL.partition("://")
        return f"{scheme}://{rest.split('/')[0]}"
    return f"https://{MEDIA_S3_BUCKET}.s3.amazonaws.com"


STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    **image_storages(),
}
