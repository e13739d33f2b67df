"""``manage.py purge_edge``: purge pages, objects, keys or everything from the edge, now.

For the day something goes wrong: runs the purge in this process (no worker
needed) and reports the targets that failed.
"""
from django.apps import apps
from django.core.management.base import BaseCommand, CommandError

from edge import affected, keys, purging


class Command(BaseCommand):
    help = "Purge the edge cache: --url PATH, --object post:12, --key KEY (each repeatable) or --all."

    def add_arguments(self, parser):
        parser.add_argument("--url", action="append", default=[], help="A page's path, e.g. /posts/hello/.")
        parser.add_argument("--object", action="append", default=[],
                            help="MODEL:PK, e.g. post:12, digest:7, author:3, tag:5, topic:2, repository:40.")
        parser.add_argument("--key", action="append", default=[], help="A surrogate key, e.g. posts or post-12.")
        parser.add_argument("--all", action="store_true", help="Everything (the key 'site').")

    def handle(self, *args, url, object, key, all, **options):
        purge_keys = set(key) | affected.keys_for_objects(map(self.lookup, object))
        if all:
            purge_keys.add(keys.SITE)
        if not purge_keys and not url:
            raise CommandError("Say what to purge: --url, --object, --key or --all.")
        for path in url:
            if not path.startswith("/"):
                raise CommandError(f"--url takes a path starting with '/': {path!r}")
        backend = purging.backend()
        failed = (backend.purge(purge_keys) if purge_keys else []) + (backend.purge_urls(url) if url else [])
        if failed:
            raise CommandError(f"The purge failed at: {', '.join(sorted(set(failed)))}")
        self.stdout.write(f"Purged {len(purge_keys)} key(s) and {len(url)} page(s) "
                          f"with the {type(backend).__name__.lower()} backend: {' '.join(sorted(purge_keys))}")

    @staticmethod
    def lookup(spec: str):
        name, _, pk = spec.partition(":")
        models = {"post": "blog.Post", "digest": "digests.Digest", "author": "blog.Author", "tag": "taggit.Tag",
                  "topic": "digests.Topic", "repository": "digests.Repository", "repo": "digests.Repository"}
        if name not in models or not pk.isdigit():
            raise CommandError(f"--object takes MODEL:PK with MODEL one of {', '.join(models)}: {spec!r}")
        model = apps.get_model(models[name])
        obj = model._base_manager.filter(pk=int(pk)).first()
        if obj is None:
            raise CommandError(f"No {name} with id {pk}.")
        return obj
