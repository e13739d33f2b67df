"""Bot accounts: their activity is kept as References but left out of digests."""
from django.conf import settings
from django.db.models.functions import Lower


def bot_logins() -> set[str]:
    """Configured bot names in lower case, each also as GitHub's "name[bot]" app login."""
    names = {name.lower().removesuffix("[bot]") for name in settings.INGESTION_BOT_LOGINS}
    return names | {f"{name}[bot]" for name in names}


def exclude_bots(references):
    """A Reference queryset without bot-authored rows (matched case-insensitively, as GitHub logins are)."""
    return references.alias(login_lower=Lower("author_login")).exclude(login_lower__in=bot_logins())
