"""Search snippets: the words of a hit that match the query, marked, without re-parsing in PostgreSQL.

See ``reader.search`` for why snippets are cut here rather than by ``ts_headline``.
Source text, much of it written by strangers, is escaped first; only our own
``<mark>`` elements are added after.
"""
import functools
import html
import re
import threading

import Stemmer
from django.utils.safestring import SafeString

SNIPPET_WORDS = 30
#: On PostgreSQL snippets are cut from at most this many characters of the start of a hit's text.
SNIPPET_SOURCE_CHARS = 1000


_local = threading.local()


def stem(word: str, algorithm: str = "english") -> str:
    """The Snowball `algorithm` stem of `word`: ``english`` as PostgreSQL's english configuration
    makes it, ``porter`` as SQLite's FTS5 ``porter`` tokenizer does (the original Porter stemmer)."""
    stemmers = getattr(_local, "stemmers", None)
    if stemmers is None:  # Stemmer objects must not be shared between threads
        stemmers = _local.stemmers = {}
    stemmer = stemmers.get(algorithm)
    if stemmer is None:
        stemmer = stemmers[algorithm] = Stemmer.Stemmer(algorithm)
    return stemmer.stemWord(word.lower())


LEXEME = re.compile(r"'((?:[^']|'')+)'")


def query_lexemes(querytree: str) -> frozenset[str]:
    """The lexemes in PostgreSQL's ``querytree()`` text, e.g. ``'alloc' & 'cuda'`` (it leaves negated terms out)."""
    return frozenset(match.replace("''", "'") for match in LEXEME.findall(querytree or ""))


#: Words whose match a Highlighter remembers (it forgets them all when full).
MAX_KNOWN_WORDS = 2000


class Highlighter:
    """Marks the words whose Snowball stem is one of the query's lexemes, like ``ts_headline``.

    The stems are `algorithm`'s: ``english`` for PostgreSQL's lexemes, ``porter`` for the
    stems SQLite's FTS5 index matched, so a snippet marks what the database matched.

    ``ts_headline`` re-parses each text with PostgreSQL's parser (about 0.2 ms
    per 600 characters, for up to 30 hits); this does the same in Python with
    the same ``english`` (Snowball) stemmer, so "allocation" still marks
    "allocator". Only the few words that could stem to a lexeme are stemmed:
    those starting with a lexeme's prefix (stemming only changes a word's
    ending). They are found in the lower-cased text with ``str.find`` per
    prefix, then taken left to right exactly as the regular expression
    ``(?:prefixes)\\w*`` would match them: a regular expression scan of the
    alternatives cost ~14 µs per 1,000 characters, most of a snippet's time.
    The word boundary is checked here: ``\\b`` and ``IGNORECASE`` made a scan twice as dear.
    """

    def __init__(self, lexemes: frozenset[str], algorithm: str = "english"):
        self.lexemes = lexemes
        self.algorithm = algorithm
        self.known: dict[str, bool] = {}
        prefixes = sorted({lexeme[: max(2, len(lexeme) - 2)] for lexeme in lexemes}, key=len, reverse=True)
        self.prefixes = tuple(prefixes)  # longest first: the alternative a regular expression would take
        pattern = rf"(?:{'|'.join(map(re.escape, prefixes))})\w*"
        self.folded = re.compile(rf"\b{pattern}", re.IGNORECASE) if prefixes else None

    def is_match(self, word: str) -> bool:
        """Whether `word` stems to a query lexeme; remembered per word (the same few words recur in every hit)."""
        known = self.known.get(word)
        if known is None:
            if len(self.known) >= MAX_KNOWN_WORDS:
                self.known.clear()
            known = self.known[word] = stem(word, self.algorithm) in self.lexemes
        return known

    def spans(self, text: str):
        """(start, end) of each word of `text` whose stem is a query lexeme, in order."""
        if not self.prefixes:
            return
        lower = text.lower()
        if len(lower) != len(text):  # a few characters lower-case to two: offsets would not carry over
            yield from (match.span() for match in self.folded.finditer(text) if self.is_match(match.group(0)))
            return
        found = {}  # start -> length of the longest prefix there
        for prefix in self.prefixes:
            start = lower.find(prefix)
            while start >= 0:
                found.setdefault(start, len(prefix))
                start = lower.find(prefix, start + 1)
        end = 0
        for start in sorted(found):
            if start < end:
                continue  # inside the previous candidate, which the expression would have consumed
            end = WORD_REST.match(lower, start + found[start]).end()
            if start and (lower[start - 1].isalnum() or lower[start - 1] == "_"):
                continue  # inside a word (``\w`` is ``isalnum()`` or "_")
            if self.is_match(lower[start:end]):
                yield start, end

    def snippet(self, text: str) -> SafeString:
        """About SNIPPET_WORDS words of `text` around the first match (or its start), matches marked.

        The words are whitespace-separated tokens: up to a third of them before the token
        holding the first match, the rest from it on. Each part of the text is split once
        (the tokens before the match, and no further than the excerpt after it), and only the
        excerpt from the first match on is searched again: there is none before it.
        """
        text = text or ""
        offset = next(self.spans(text), (None,))[0]
        if offset is None:
            tokens = text.split(None, SNIPPET_WORDS)
            excerpt = " ".join(tokens[:SNIPPET_WORDS])
            escape = html.escape if len(html.escape(excerpt)) != len(excerpt) else str
            return SafeString(escape(excerpt) + (" …" if len(tokens) > SNIPPET_WORDS else ""))
        head = text[:offset].split()
        # A match may start inside a token ("(codegen"): that token's start belongs to it.
        cut = head.pop() if offset and not text[offset - 1].isspace() else ""
        start = max(0, len(head) - SNIPPET_WORDS // 3)
        before = head[start:]
        wanted = SNIPPET_WORDS - len(before)
        # Split no further than the excerpt: one more item (the rest) means more words follow.
        after = text[offset - len(cut) :].split(None, wanted)
        excerpt = " ".join(before + after[:wanted])
        # Escaping only lengthens text: an excerpt it leaves as long has nothing to escape (most of them).
        escape = html.escape if len(html.escape(excerpt)) != len(excerpt) else str
        position = len(" ".join(before)) + bool(before) + len(cut)  # the first match, in the excerpt
        rest = excerpt[position:]
        parts = ["… " if start else "", escape(excerpt[:position])]
        position = 0
        for begin, end in self.spans(rest):
            parts += [escape(rest[position:begin]), "<mark>", escape(rest[begin:end]), "</mark>"]
            position = end
        parts += [escape(rest[position:]), " …" if len(after) > wanted else ""]
        return SafeString("".join(parts))  # escaped above (SafeString: mark_safe's lazy-string checks cost more)


WORD_REST = re.compile(r"\w*")


@functools.lru_cache(maxsize=64)
def highlighter(querytree: str) -> Highlighter:
    return Highlighter(query_lexemes(querytree))


def porter_highlighter(words: list[str]) -> Highlighter:
    """Marks what SQLite's FTS5 index matched for `words`: each word's Porter stem is a lexeme."""
    return Highlighter(frozenset(stem(word, "porter") for word in words), "porter")
