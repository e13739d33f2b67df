"""RepoJournal in the fediverse (issue 38): actors, WebFinger, NodeInfo and ActivityStreams documents.

This first part is read-only discovery: nothing here receives or sends activities (no inbox, no
Follow, no signatures, no delivery yet). docs/fediverse.md says what works and what does not.
"""
