"""The S3 path, against a real S3 API: moto's server, started here on a free loopback port.

The bucket is set up as docs/deployment.md says (a policy letting anyone read ``renditions/*``
and nothing else); the storages come from the same environment variables production reads
(``repojournal.settings.images.image_storages``). An upload stores its original and renditions
in the bucket, a page links the renditions at the bucket's URL, and those URLs answer over
HTTP, immutable, to anyone; the original answers 403 to anyone but the app.
"""
import json
import re
import urllib.error
import urllib.request

import pytest
from django.urls import reverse

from blog.factories import PostFactory
from repojournal.settings.images import image_storages, images_origin

from .conftest import jpeg_with_gps

moto_server = pytest.importorskip("moto.server", reason="moto[s3] (a dev dependency) is not installed")

pytestmark = pytest.mark.django_db
BUCKET = "repojournal-images"
POLICY = {"Version": "2012-10-17", "Statement": [{
    "Sid": "ReadersGetRenditions", "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
    "Resource": f"arn:aws:s3:::{BUCKET}/renditions/*"}]}


@pytest.fixture(scope="module")
def s3_endpoint():
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def bucket_environment(s3_endpoint, monkeypatch, settings):
    """The environment of an app server using the bucket, and STORAGES as the settings build them from it."""
    import boto3

    environment = {"MEDIA_S3_BUCKET": BUCKET, "MEDIA_S3_ENDPOINT_URL": s3_endpoint, "MEDIA_S3_REGION": "us-east-1",
                   "AWS_ACCESS_KEY_ID": "test-key", "AWS_SECRET_ACCESS_KEY": "test-secret"}
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    client = boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1")
    if BUCKET not in [found["Name"] for found in client.list_buckets()["Buckets"]]:
        client.create_bucket(Bucket=BUCKET)
        client.put_bucket_policy(Bucket=BUCKET, Policy=json.dumps(POLICY))
    settings.STORAGES = {**settings.STORAGES, **image_storages(environment)}
    yield environment
    for found in client.list_objects_v2(Bucket=BUCKET).get("Contents", []):
        client.delete_object(Bucket=BUCKET, Key=found["Key"])


def fetch(url: str) -> tuple[int, dict, bytes]:
    """An anonymous GET, as a reader's browser makes it."""
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, {name.lower(): value for name, value in response.headers.items()}, response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), b""


def test_uploads_go_to_the_bucket_and_readers_load_renditions_from_it(client, upload, bucket_environment, s3_endpoint):
    image, = upload({"camera.jpg": jpeg_with_gps()})
    post = PostFactory(body=f"![A photo](image:{image.pk})")
    page = client.get(post.get_absolute_url()).content.decode()
    urls = re.findall(r"(http://[^\s\"]+) \d+w", page)
    assert len(urls) == len(image.renditions) == 6 and all(  # 800 px wide upright: 480 and 800
        url.startswith(f"{s3_endpoint}/{BUCKET}/renditions/{image.content_hash}/") for url in urls)
    for url in urls:
        status, headers, body = fetch(url)
        assert status == 200, url
        assert headers.get("cache-control") == "public, max-age=31536000, immutable", headers
        assert headers["content-type"] == {"avif": "image/avif", "webp": "image/webp", "jpg": "image/jpeg"}[url.rsplit(".", 1)[1]]
        assert b"SecretCam" not in body and b"Exif" not in body
    assert fetch(f"{s3_endpoint}/{BUCKET}/originals/{image.original}")[0] == 403  # private


def test_staff_read_the_original_through_the_app_and_deleting_empties_the_bucket(
        editing, upload, bucket_environment, django_capture_on_commit_callbacks):
    import boto3

    image, = upload({"camera.jpg": jpeg_with_gps()})
    response = editing.get(reverse("admin:images_image_original", args=[image.pk]))
    assert b"SecretCam" in b"".join(response.streaming_content)
    objects = boto3.client("s3", endpoint_url=bucket_environment["MEDIA_S3_ENDPOINT_URL"], region_name="us-east-1")
    assert objects.list_objects_v2(Bucket=BUCKET)["KeyCount"] == 1 + len(image.renditions)
    with django_capture_on_commit_callbacks(execute=True):
        image.delete()
    assert objects.list_objects_v2(Bucket=BUCKET)["KeyCount"] == 0


def test_the_content_security_policy_allows_a_bucket_served_over_http():
    assert images_origin({"MEDIA_S3_BUCKET": BUCKET, "MEDIA_S3_ENDPOINT_URL": "http://10.0.0.9:9000/"}) == \
        "http://10.0.0.9:9000"
    assert images_origin({"MEDIA_S3_BUCKET": BUCKET, "MEDIA_S3_CUSTOM_DOMAIN": "img.example.com/x"}) == \
        "https://img.example.com"
    assert images_origin({}) == ""
