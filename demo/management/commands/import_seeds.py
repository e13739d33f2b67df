"""Load the design documents (demo/seeds/, a copy of ../shared/seeds/) as demo content."""
from collections import Counter
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from demo.posts import import_recent_posts
from demo.wire import (
    SeedFormatError,
    import_digest,
    import_pull_request,
    parse_pull_request_page,
    parse_wire_digest,
)


def classify(text: str) -> str:
    """Which kind of seed document this is, from its first line."""
    first = text.lstrip().splitlines()[0].strip() if text.strip() else ""
    if first.startswith("The Wire"):
        return "digest"
    if first == "Recent Posts":
        return "posts"
    if first == "Skip to content" or " wants to merge " in text:
        return "pull_request"
    return "unknown"


def import_seed_directory(directory: Path) -> Counter:
    """Import every document in `directory`; pull-request pages first, so digests can cite them.

    Returns outcome counts such as {"digest created": 2, "post unchanged": 14}.
    """
    documents = sorted(directory.glob("*.txt"))
    if not documents:
        raise CommandError(f"No seed documents (*.txt) in {directory}.")
    by_kind: dict[str, list[tuple[Path, str]]] = {}
    for path in documents:
        text = path.read_text(encoding="utf-8")
        by_kind.setdefault(classify(text), []).append((path, text))
    if "unknown" in by_kind:
        raise CommandError(f"Unrecognised seed document: {by_kind['unknown'][0][0].name}")
    counts: Counter = Counter()
    importers = [
        ("pull_request", lambda text: [import_pull_request(parse_pull_request_page(text))]),
        ("digest", lambda text: [import_digest(parse_wire_digest(text))]),
        ("post", import_recent_posts),
    ]
    for kind, importer in importers:
        for path, text in by_kind.get("posts" if kind == "post" else kind, []):
            try:
                results = importer(text)
            except SeedFormatError as error:
                raise CommandError(f"{path.name}: {error}") from error
            counts.update(f"{kind} {outcome}" for _obj, outcome in results)
    return counts


class Command(BaseCommand):
    help = "Import the seed documents (two Wire digests, the Recent Posts index, a pull-request page). Re-runnable."

    def add_arguments(self, parser):
        parser.add_argument(
            "directory", nargs="?", type=Path, default=None,
            help="Folder of seed documents (default: settings.SEEDS_DIR, i.e. demo/seeds).",
        )

    def handle(self, *args, directory=None, **options):
        directory = directory or settings.SEEDS_DIR
        if not directory.is_dir():
            raise CommandError(f"Seed folder not found: {directory}")
        counts = import_seed_directory(directory)
        summary = ", ".join(f"{count} {label}" for label, count in sorted(counts.items()))
        self.stdout.write(self.style.SUCCESS(f"Imported seeds from {directory}: {summary}."))
