"""Each actor's RSA key pair: made on first use, the private half never leaving the database."""
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from django.db import IntegrityError, models, router, transaction
from django.views.decorators.debug import sensitive_variables

KEY_BITS = 2048


@sensitive_variables("key", "private")  # never printed in an error report
def new_key_pair() -> tuple[str, str]:
    """(public PEM, private PEM) of a fresh RSA key: what Mastodon and the HTTP Signatures drafts expect."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=KEY_BITS)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return public, private


class ActorKeyQuerySet(models.QuerySet):
    @sensitive_variables("public", "private")
    def for_handle(self, handle: str) -> "ActorKey":
        """The actor's key pair, made the first time anyone asks (two first askers: one pair wins).

        Read from the primary: a replica behind it would not have the row another request just made.
        """
        primary = self.using(router.db_for_write(self.model))
        found = primary.filter(handle=handle).first()
        if found is not None:
            return found
        public, private = new_key_pair()
        try:
            with transaction.atomic():
                return primary.create(handle=handle, public_key_pem=public, private_key_pem=private)
        except IntegrityError:
            return primary.get(handle=handle)


class ActorKey(models.Model):
    """An actor's signing key. Keyed by handle, not by the topic's or author's row: a handle is what
    remote servers know the actor by, and its key must outlive a renamed slug only with the handle."""

    handle = models.CharField(max_length=100, unique=True)
    public_key_pem = models.TextField(editable=False)
    #: Never printed: not in the admin (see admin.py), the API or any document.
    private_key_pem = models.TextField(editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = ActorKeyQuerySet.as_manager()

    class Meta:
        ordering = ["handle"]

    def __str__(self) -> str:
        return f"key of @{self.handle}"

    def __repr__(self) -> str:  # a traceback or a debug print must not show the private key
        return f"<ActorKey {self.handle}>"
