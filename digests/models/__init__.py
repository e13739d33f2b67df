"""The Wire: topics, repositories, the activity we cite, and the daily digests.

One module per model family; querysets live beside their models. The signals that
keep each digest's stored parts true are in ``digests/signals.py``.
"""
from .digests import FEED_DIGEST_FIELDS, ActionItem, Digest, DigestCard, DigestReference, DigestRepository, FAQEntry
from .references import Reference
from .rerenders import DigestRerender
from .search import SearchCitation
from .tallies import MergeTally
from .topics import Repository, Topic, full_name_validator

__all__ = [
    "ActionItem", "Digest", "DigestCard", "DigestReference", "DigestRepository", "DigestRerender", "FAQEntry",
    "FEED_DIGEST_FIELDS", "MergeTally", "Reference", "Repository", "SearchCitation", "Topic", "full_name_validator",
]
