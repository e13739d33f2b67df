"""Signals for writes Django's model signals do not announce.

Bulk writes (``bulk_create``, ``bulk_update``, ``QuerySet.update()``) send no
``post_save``, yet what they write may show on public pages: re-rendered digest
parts, re-rendered post cards, a poll's page of references. Content code sends
``content_changed`` after such a write; whoever keeps copies of public output
(the page cache, the edge) listens to it from its own app, so content apps never
import them.
"""
from django.dispatch import Signal

#: ``sender``: the model whose rows were written in bulk. ``pks``: their primary keys (a list, or a
#: ``values("pk")`` queryset a receiver may use as a subquery), or None for "some rows of this model". Send it after the write, inside or outside a transaction:
#: receivers that act on other processes defer their work to the commit themselves.
content_changed = Signal()


def announce_bulk_write(model, pks=None) -> None:
    """Tell listeners that rows of `model` (these `pks`, or unknown ones) were written without model signals."""
    content_changed.send(sender=model, pks=pks)

#: ``sender``: a workflow model; ``object_id``: the item's primary key; ``user``: who opened its change page
#: in the admin, able to edit it (``WorkflowAdmin.change_view``). Ingestion notes the first such opening of a
#: drafted digest (``DigestDraft.opened_at``): what the newsroom's "Drafted digests" lists is what no editor
#: has opened yet. Sent after the page rendered, on GET only.
change_page_opened = Signal()
