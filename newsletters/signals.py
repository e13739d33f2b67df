"""Connected in NewslettersConfig.ready (the sending helper fills this in)."""


def connect_signals() -> None:
    pass
