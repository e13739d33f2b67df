"""A small day of merged pull requests, and a model answer that passes every check, for the drafting tests."""
import copy
import datetime

from digests.factories import ReferenceFactory, RepositoryFactory, TopicFactory

DAY = datetime.date(2026, 7, 2)
#: The numbers drafting assigns: the busiest repository first, then by PR number.
GOOD = {
    "headline": "PyTorch doubles matmul speed on MPS; Vision fixes a resize crash",
    "summary": [{"text": "PyTorch made matmul on MPS 2x faster [1], and Vision fixed a crash in resize.", "cites": [3]}],
    "body": [{"text": "The MPS matmul kernel now tiles its inputs, which the PR measures at 2x on 4096x4096 [1].",
              "cites": [1]},
             {"text": "Vision's resize no longer crashes on empty images.", "cites": [3]}],
    "action_items": [{"text": "If you resize empty images: upgrade Vision.", "repository": "pytorch/vision",
                      "priority": "plan", "cites": [3]}],
    "faq": [{"question": "What changed in PyTorch on July 2, 2026?", "answer": "Matmul on MPS got 2x faster.",
             "cites": [1]}],
}


def good(**changes) -> dict:
    """The passing answer with some parts replaced (e.g. a bad sentence added to ``body``)."""
    return {**copy.deepcopy(GOOD), **changes}


def with_part(part: str, item: dict) -> dict:
    answer = good()
    answer[part] = [*answer[part], item]
    return answer


def make_day(day: datetime.date = DAY):
    """pytorch/pytorch merged #100 (matmul) and #101 (docs), pytorch/vision #7 (resize), on ``day``."""
    topic = TopicFactory(name="PyTorch", slug="pytorch")
    core = RepositoryFactory(full_name="pytorch/pytorch", topic=topic)
    vision = RepositoryFactory(full_name="pytorch/vision", topic=topic)
    at = datetime.datetime.combine(day, datetime.time(10), tzinfo=datetime.UTC)
    ReferenceFactory(repository=core, number=100, key="100", merged_at=at, labels=["release notes: mps"],
                     title="[MPS] Tile matmul inputs", body="Tiling the inputs makes matmul 2x faster on 4096x4096.",
                     stats={"additions": 120, "deletions": 10, "changed_files": 3})
    ReferenceFactory(repository=core, number=101, key="101", merged_at=at, title="Fix typo in docs", body="")
    ReferenceFactory(repository=vision, number=7, key="7", merged_at=at, title="Fix resize crash on empty images",
                     body="resize() raised on an image with no pixels.")
    return topic
