"""Placeholder."""


class FeedError(Exception):
    pass
