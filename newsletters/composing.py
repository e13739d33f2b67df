"""The email for a message: the page's content as HTML (CSS inlined by css-inline) and plain text.

The shared part — everything but the recipient's links — is rendered once per message
(``rendered``) from the item's stored, sanitised HTML: the digest's summary, body, action items,
references and FAQ (``digests.cards``' stored parts, so the email shows what the page shows), or
the post's header, lead image and body. ``email_html`` makes every link absolute, points
citations at their references and turns ``<picture>`` into one email-safe ``<img>``. A recipient's
email is then the shared text with two URLs substituted (``Rendered.email``, ``Rendered.mime``):
at 100,000 recipients, rendering per recipient would cost more than the SMTP server's time.

No tracking pixels and no rewritten links: every link is the one the page has.
"""
import binascii
import dataclasses
import email.message
import email.policy
import email.utils
import functools
import re
import uuid

import css_inline
from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.core.mail.message import sanitize_address
from django.template.loader import render_to_string
from django.urls import reverse

from blog.models import Post
from digests.models import Digest

from . import links
from .email_html import email_html, plain_text
from .models import Delivery, Message, Subscriber

MANAGE = "https://newsletter.invalid/__manage__"
UNSUBSCRIBE = "https://newsletter.invalid/__unsubscribe__"
TOKEN = "__token__"


@functools.lru_cache(maxsize=1)
def _inliner() -> css_inline.CSSInliner:
    return css_inline.CSSInliner(load_remote_stylesheets=False)


@dataclasses.dataclass
class Rendered:
    """One message's shared email: the recipient's links are the MANAGE and UNSUBSCRIBE placeholders."""

    kind: str  # "digest", "post", "summary"
    key: int  # the item's id (a summary: its first delivery's)
    subject: str
    html: str
    text: str
    list_id: str
    head: bytes = b""
    boundary: str = ""

    def __post_init__(self):
        shared = email.message.EmailMessage(policy=email.policy.SMTP)
        shared["Subject"] = self.subject
        shared["From"] = settings.DEFAULT_FROM_EMAIL
        shared["Date"] = email.utils.formatdate(localtime=False)
        shared["List-Id"] = self.list_id
        shared["MIME-Version"] = "1.0"
        self.boundary = f"=_{uuid.uuid4().hex}"
        shared["Content-Type"] = f'multipart/alternative; boundary="{self.boundary}"'
        self.head = b"".join(shared.policy.fold_binary(name, value) for name, value in shared.items())

    def message_id(self, subscriber_id: int | None, test_id: int | None = None) -> str:
        who = subscriber_id if test_id is None else f"test{test_id}"
        return f"<{self.kind}.{self.key}.{who}@{settings.NEWSLETTERS_MESSAGE_ID_DOMAIN}>"

    def personal(self, manage: str, unsubscribe: str) -> tuple[str, str]:
        return (self.text.replace(MANAGE, manage).replace(UNSUBSCRIBE, unsubscribe),
                self.html.replace(MANAGE, manage).replace(UNSUBSCRIBE, unsubscribe))

    def headers(self, message_id: str, unsubscribe: str | None) -> dict[str, str]:
        headers = {"Message-ID": message_id, "List-Id": self.list_id}
        if unsubscribe:
            headers["List-Unsubscribe"] = f"<{unsubscribe}>"
            headers["List-Unsubscribe-Post"] = "List-Unsubscribe=One-Click"
        return headers

    def email(self, to: str, message_id: str, manage: str, unsubscribe: str | None) -> EmailMultiAlternatives:
        """As a Django email, for any backend (anymail's providers, files, the test outbox)."""
        text, html = self.personal(manage, unsubscribe or manage)
        mail = EmailMultiAlternatives(self.subject, text, settings.DEFAULT_FROM_EMAIL, [to],
                                      headers=self.headers(message_id, unsubscribe))
        mail.attach_alternative(html, "text/html")
        return mail

    def mime(self, to: str, message_id: str, manage: str, unsubscribe: str) -> bytes:
        """The same email as ``email`` gives, as the bytes an SMTP server receives (the fast path).

        Each part is quoted-printable, encoded once in pieces split at the two links (``pieces``):
        a recipient's bytes are those pieces joined around their own two links, encoded alone.
        """
        address = to if to.isascii() and not {"\r", "\n"} & set(to) else sanitize_address(to, "utf-8")
        links = {MANAGE: _qp(manage), UNSUBSCRIBE: _qp(unsubscribe)}
        return b"".join((
            self.head, b"To: ", address.encode(), b"\r\nMessage-ID: ", message_id.encode(),
            b"\r\nList-Unsubscribe: <", unsubscribe.encode(),
            b">\r\nList-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n\r\n",
            *(links.get(piece, piece) for piece in self.pieces),
        ))

    @functools.cached_property
    def pieces(self) -> list:
        """Both parts as encoded pieces, with MANAGE and UNSUBSCRIBE (the str) where a link goes. Pieces
        end in a soft line break ("=" CRLF), so each may be encoded alone (RFC 2045, 6.7)."""
        pieces = []
        for subtype, body in (("plain", self.text), ("html", self.html)):
            pieces.append((f'--{self.boundary}\r\nContent-Type: text/{subtype}; charset="utf-8"\r\n'
                           "Content-Transfer-Encoding: quoted-printable\r\n\r\n").encode())
            crlf = body.replace("\r\n", "\n").replace("\n", "\r\n")
            for index, chunk in enumerate(PLACEHOLDERS.split(crlf)):
                pieces.append(chunk if index % 2 else _qp(chunk))
            pieces.append(b"\r\n")
        pieces.append(f"--{self.boundary}--\r\n".encode())
        return pieces


PLACEHOLDERS = re.compile(f"({re.escape(MANAGE)}|{re.escape(UNSUBSCRIBE)})")


def _qp(text: str) -> bytes:
    """Quoted-printable (binascii, in C) ending in a soft line break, so pieces join into valid lines."""
    encoded = binascii.b2a_qp(text.encode(), istext=True)  # soft breaks are bare LFs when the text has no CRLF
    return encoded.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n") + b"=\r\n"


def finish(kind: str, key: int, subject: str, list_name: str, body_html: str, page_url: str,
           citations: dict[int, str] | None = None) -> Rendered:
    """The whole email around an item's HTML: links made absolute, CSS inlined, the text derived."""
    body = email_html(body_html, page_url, citations or {})
    document = render_to_string("newsletters/email/layout.html", {
        "subject": subject, "body": body, "manage_url": MANAGE, "unsubscribe_url": UNSUBSCRIBE,
        "site_url": settings.SITE_URL,
    })
    html = _inliner().inline(document)
    text = plain_text(body) + render_to_string("newsletters/email/footer.txt", {
        "manage_url": MANAGE, "unsubscribe_url": UNSUBSCRIBE, "page_url": page_url})
    list_id = f"RepoJournal {list_name} <{list_name.lower().replace(' ', '-')}.{settings.NEWSLETTERS_MESSAGE_ID_DOMAIN}>"
    return Rendered(kind, key, subject, html, text, list_id)


def render_digest(digest: Digest, url: str) -> Rendered:
    citations = {cited.number: cited.reference.url
                 for cited in digest.digest_references.select_related("reference") if cited.reference.url}
    body = render_to_string("newsletters/email/digest.html", {"digest": digest, "url": url})
    return finish("digest", digest.pk, digest.headline, "The Wire", body, url, citations)


def render_post(post: Post, url: str) -> Rendered:
    body = render_to_string("newsletters/email/post.html", {"post": post, "url": url})
    return finish("post", post.pk, post.title, "Blog", body, url)


def rendered(message_id: int) -> Rendered:
    """A message's shared email (callers sending many keep it: ``sending`` renders once a batch run).
    The item's stored HTML is what was published; an edit after fan-out is not mailed again."""
    message = Message.objects.select_related("digest__topic", "post").get(pk=message_id)
    if message.digest is not None:
        return render_digest(message.digest, message.url)
    if message.post is not None:
        return render_post(message.post, message.url)
    raise LookupError(f"Message {message_id} has no item left to mail.")


def link_prefixes() -> tuple[str, str]:
    """The manage and unsubscribe URLs with TOKEN for the token (``links``), reversed once a run."""
    return (links.absolute(reverse("newsletters:manage", args=[TOKEN])),
            links.absolute(reverse("newsletters:unsubscribe", args=[TOKEN])))


def recipient_links(subscriber_id: int, manage_key: str, prefixes: tuple[str, str] | None = None) -> tuple[str, str]:
    """A subscriber's manage and unsubscribe URLs: a token is only ``[A-Za-z0-9_:-]``, so substituting
    it in the reversed prefix gives what ``links.manage_url``/``unsubscribe_url`` give."""
    token = links.manage_token(Subscriber(pk=subscriber_id, manage_key=manage_key))
    manage, unsubscribe = prefixes or link_prefixes()
    return manage.replace(TOKEN, token), unsubscribe.replace(TOKEN, token)


def compose(delivery: Delivery, shared: Rendered | None = None) -> EmailMultiAlternatives:
    """The email of one delivery. Without a subscriber (an editor's test send) its links go to the
    site's home and it has no List-Unsubscribe; its Message-ID names the test message."""
    shared = shared or rendered(delivery.message_id)
    if delivery.subscriber_id is None:
        home = f"{settings.SITE_URL}/"
        return shared.email(delivery.email, shared.message_id(None, delivery.message_id), home, None)
    manage, unsubscribe = recipient_links(delivery.subscriber_id, delivery.subscriber.manage_key)
    return shared.email(delivery.email, shared.message_id(delivery.subscriber_id), manage, unsubscribe)
