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
# The bucket, from the environment (image_storages): MEDIA_S3_BUCKET (set: use it), MEDIA_S3_ENDPOINT_URL
# (empty: AWS itself; else MinIO, R2, moto...), MEDIA_S3_REGION, MEDIA_S3_CUSTOM_DOMAIN (a CDN in front of
# the bucket: renditions are linked there), MEDIA_S3_RENDITIONS_ACL (a canned ACL such as public-read for
# buckets that use ACLs; by default none is sent and a bucket policy makes renditions/* public).
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


def image_storages(environ=os.environ) -> dict:
    """The "images" and "image_originals" entries of STORAGES, for the MEDIA_S3_* variables in `environ`."""
    bucket_name = environ.get("MEDIA_S3_BUCKET", "")
    if not bucket_name:
        filesystem = "django.core.files.storage.FileSystemStorage"
        return {"images": {"BACKEND": filesystem, "OPTIONS": {"location": MEDIA_ROOT, "base_url": MEDIA_URL}},
                "image_originals": {"BACKEND": filesystem, "OPTIONS": {"location": IMAGES_ORIGINALS_ROOT}}}
    bucket = {"bucket_name": bucket_name, "endpoint_url": environ.get("MEDIA_S3_ENDPOINT_URL") or None,
              "region_name": environ.get("MEDIA_S3_REGION") or None, "file_overwrite": True}
    acl = {"ACL": environ["MEDIA_S3_RENDITIONS_ACL"]} if environ.get("MEDIA_S3_RENDITIONS_ACL") else {}
    return {
        "images": {"BACKEND": "storages.backends.s3.S3Storage", "OPTIONS": {
            **bucket, "location": "renditions", "querystring_auth": False,
            "object_parameters": {"CacheControl": IMAGES_IMMUTABLE, **acl},
            "custom_domain": environ.get("MEDIA_S3_CUSTOM_DOMAIN") or None}},
        "image_originals": {"BACKEND": "storages.backends.s3.S3Storage", "OPTIONS": {
            **bucket, "location": "originals", "querystring_auth": True}},
    }


def images_origin(environ=os.environ) -> str:
    """Where readers load renditions from when that is not this site: the bucket's (or its CDN's) origin,
    which the Content-Security-Policy's img-src must name when it is plain http (https: is allowed)."""
    bucket, domain, endpoint = (environ.get(name, "") for name in (
        "MEDIA_S3_BUCKET", "MEDIA_S3_CUSTOM_DOMAIN", "MEDIA_S3_ENDPOINT_URL"))
    if not bucket:
        return ""
    if domain:
        return f"https://{domain.split('/')[0]}"
    if endpoint:
        scheme, _, rest = endpoint.partition("://")
        return f"{scheme}://{rest.split('/')[0]}"
    return f"https://{bucket}.s3.amazonaws.com"


STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    **image_storages(),
}
