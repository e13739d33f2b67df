"""What an editor typed in a change form and has not saved: one autosave per user and item.

It is the editor's own, not the item's: readers never see it, nor do other editors (every query
names the user), and it is no revision (django-reversion records only registered models, and this
is none; saving it never touches the item). It lives until the form is saved or the editor
discards it; what is abandoned, retention prunes (``RETENTION_AUTOSAVE_DAYS``, newsroom.retention).
"""
from django.conf import settings
from django.contrib.contenttypes.models import ContentType
from django.db import models
from django.utils import timezone


class AutosaveQuerySet(models.QuerySet):
    def of(self, user, item) -> "AutosaveQuerySet":
        """`user`'s autosave of `item` (none or one): never another editor's."""
        return self.about(item).filter(user=user)

    def about(self, item) -> "AutosaveQuerySet":
        """Every editor's autosave of `item` (when it is deleted, none can be restored)."""
        return self.filter(content_type=ContentType.objects.get_for_model(item), object_id=str(item.pk))

    def abandoned(self, cutoff) -> "AutosaveQuerySet":
        """Autosaves nobody touched since `cutoff`: the editor never came back to restore them."""
        return self.filter(saved_at__lt=cutoff)

    def keep(self, user, item, fields: list) -> "Autosave":
        """Keep `fields` (the form's ``[name, value]`` pairs) as `user`'s autosave of `item`, replacing the last."""
        autosave, _created = self.update_or_create(
            user=user, content_type=ContentType.objects.get_for_model(item), object_id=str(item.pk),
            defaults={"fields": fields, "saved_at": timezone.now()})
        return autosave


class Autosave(models.Model):
    """A change form's fields as an editor last had them, kept as they typed; offered back when they return."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="autosaves")
    content_type = models.ForeignKey(ContentType, on_delete=models.CASCADE)
    object_id = models.CharField(max_length=64)
    # The form's fields as the browser would post them: [name, value] pairs, in order (a name may repeat).
    fields = models.JSONField()
    saved_at = models.DateTimeField(default=timezone.now, db_index=True)

    objects = AutosaveQuerySet.as_manager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "content_type", "object_id"],
                                               name="one_autosave_per_user_and_item")]

    def __str__(self) -> str:
        return f"{self.user}'s unsaved changes to {self.content_type.model} {self.object_id}"
