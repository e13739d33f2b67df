"""What of a model's answer may reach a draft: the contract it must follow and the checks (docs/drafting.md).

The answer is parsed against ``ModelDraft`` (the public JSON contract), then
every sentence, paragraph, action item and FAQ answer is checked against the
references it cites; one that fails a check is dropped, and ``Checked.dropped``
says what and why. The checks are deterministic -- no model is asked whether
the model was right:

1. it cites at least one number, and only numbers of the day's references;
2. every figure in it (``1.6x``, ``10-15%``, ``384x384``, ``v2``, ``2.4.1``, ``#186025``)
   appears in the title or description of a reference it cites;
3. every ``owner/name`` it mentions is a repository of the topic (a code path it
   quotes from a reference it cites aside, ``repositories_in``), and an action
   item's repository is that of a reference it cites and of the topic;
4. no link, URL, HTML, Markdown image or heading;
5. lengths: headline at most 300 characters and uncited, 1-4 summary items of one sentence each
   (``sentences``), 5 action items.

The headline must pass 3-5; ``Checked.fallback`` says why the rule-based writer
must write the draft instead (check 6), which ``drafting`` acts on.
"""
import re
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

HEADLINE_MAX = 300
SUMMARY_MAX = 4
ACTIONS_MAX = 5

CITATION = re.compile(r"\[(?:ref:)?(\d+)\]")
CITATIONS_AT_END = re.compile(r"(\s*(?:\[(?:ref:)?\d+\])+)+\s*$")
FIGURE = re.compile(
    r"(?<![\w.])(?:"
    r"#\d+"  # a PR or issue number
    r"|v\d+(?:\.\d+)*"  # v2, v2.4
    r"|\d+(?:\.\d+){2,}"  # 2.4.1
    r"|\d+(?:\.\d+)?\s*[x×]\s*\d+(?:\.\d+)?"  # 384x384
    r"|\d+(?:\.\d+)?\s*(?:[-–]\s*\d+(?:\.\d+)?\s*)?(?:%|[x×](?![a-z])|times\b|(?:ms|s|µs|us|ns|[kKMGT]i?B|GB/s|MB/s"
    r"|[kKMB]|tok/s|tokens|FLOPS|TFLOPS|GHz|MHz|fps|seconds|minutes|hours|days)\b)"
    r"|\d+\.\d+"  # any other decimal
    r")", re.IGNORECASE)
REPOSITORY = re.compile(r"(?<![\w./-])([A-Za-z0-9][A-Za-z0-9-]*)/([A-Za-z0-9._-]*[A-Za-z0-9_-])(?![\w/-])")
FILE_LIKE = re.compile(r"\.(?:py|pyi|cpp|cc|c|h|hpp|cu|cuh|md|rst|txt|yml|yaml|json|toml|cfg|ini|sh|js|ts|rs|go)$",
                       re.IGNORECASE)
#: A sentence ends at . ! or ? (then any closing quotes, brackets and citations) before space and a capital or digit.
SENTENCE_END = re.compile(r"[.!?][\"')\]]*(?:\s*\[(?:ref:)?\d+\])*\s+(?=[\"'(]?[A-Z0-9])")
ABBREVIATIONS = {"e.g", "i.e", "etc", "vs", "cf", "approx", "incl", "no", "fig", "mr", "ms", "dr", "st"}
MARKUP = [
    (re.compile(r"https?://|ftp://|www\.\w", re.IGNORECASE), "a link or URL"),
    (re.compile(r"!\[[^\]]*\]\("), "a Markdown image"),
    (re.compile(r"\[[^\]]+\]\([^)]*\)"), "a Markdown link"),
    (re.compile(r"</?[A-Za-z][^>]*>|<!--"), "HTML"),
    (re.compile(r"(?:^|\n)\s{0,3}#{1,6}\s"), "a heading"),
    (re.compile(r"\b[\w.+-]+\.(?:com|org|net|io|dev|ai|co|xyz|ru|cn)(?:/\S*)?\b", re.IGNORECASE), "a web address"),
]


class Cited(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str
    cites: list[int]


class ModelActionItem(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str
    repository: str
    priority: Literal["immediate", "plan", "monitor"]
    cites: list[int]


class ModelFAQ(BaseModel):
    model_config = ConfigDict(extra="forbid")
    question: str
    answer: str
    cites: list[int]


class ModelDraft(BaseModel):
    """The JSON object the model must return (docs/drafting.md, "The contract")."""

    model_config = ConfigDict(extra="forbid")
    headline: str
    summary: list[Cited]
    body: list[Cited]
    action_items: list[ModelActionItem]
    faq: list[ModelFAQ]


def response_schema() -> dict:
    """The contract as a JSON Schema for ``response_format`` (every property required, none extra)."""
    return ModelDraft.model_json_schema()


@dataclass
class Source:
    """What a reference gives a cited sentence to stand on: its repository and its words."""

    repository: str
    text: str  # title, description, "#number" and "owner/name#number", lower-cased


@dataclass
class Checked:
    """The answer's surviving parts, the dropped ones with reasons, and why to fall back, if so."""

    headline: str = ""
    summary: list[Cited] = field(default_factory=list)
    body: list[Cited] = field(default_factory=list)
    action_items: list[ModelActionItem] = field(default_factory=list)
    faq: list[ModelFAQ] = field(default_factory=list)
    dropped: list[dict] = field(default_factory=list)
    fallback: str = ""

    def drop(self, part: str, text: str, reason: str) -> None:
        self.dropped.append({"part": part, "text": text, "reason": reason})


def numbers_in(text: str, cites: list[int]) -> list[int]:
    """Every number cited: inline ``[n]`` / ``[ref:n]`` and in ``cites``."""
    return list(dict.fromkeys([int(n) for n in CITATION.findall(text)] + list(cites)))


def _figure(text: str) -> str:
    """A figure as compared: lower case, no spaces, "×" as "x", "–" as "-", no leading "v"."""
    return re.sub(r"\s+", "", text.lower().replace("×", "x").replace("–", "-")).removeprefix("v")


def figures(text: str) -> set[str]:
    return {_figure(match[0]) for match in FIGURE.finditer(CITATION.sub(" ", text))}


def sentences(text: str) -> list[str]:
    """``text`` split into sentences: not inside ``v2.4.1`` or ``1.6x`` (no space after the dot), nor after
    an abbreviation (``e.g.``, ``etc.``) or an initial (``J.``)."""
    found, start = [], 0
    for match in SENTENCE_END.finditer(text):
        before = text[start:match.start()].split()
        word = before[-1].lstrip("(\"'").lower() if before else ""
        if word in ABBREVIATIONS or (len(word) == 1 and word.isalpha()):
            continue
        found.append(text[start:match.end()].strip())
        start = match.end()
    rest = text[start:].strip()
    return found + ([rest] if rest else [])


def check_citations(numbers: list[int], sources: dict[int, Source]) -> str:
    """Check 1."""
    if not numbers:
        return "cites no reference"
    unknown = [n for n in numbers if n not in sources]
    return f"cites [{'], ['.join(map(str, unknown))}], not a reference of the day" if unknown else ""


def check_figures(text: str, numbers: list[int], sources: dict[int, Source]) -> str:
    """Check 2: each figure, spacing and case aside, is one of a cited reference's title or description."""
    stated = set().union(*(figures(sources[n].text) for n in numbers if n in sources))
    for match in FIGURE.finditer(CITATION.sub(" ", text)):
        if _figure(match[0]) not in stated:
            return f"the figure “{match[0]}” is in none of the references it cites"
    return ""


def repositories_in(text: str, topic_repositories: set[str], quoted: str = "") -> list[str]:
    """``owner/name`` mentions, code paths aside.

    A longer path (``torch/_higher_order_ops/cond``, ``./tools/setup.py``) never matches ``REPOSITORY``.
    A two-part one shaped like code -- a file (``test/test_nn.py``) or a name with an underscore
    (``torch/_inductor``, ``cond/while_loop``) -- is code only if ``quoted`` (the text of the references
    it cites) has it word for word: by shape alone ``vercel/next.js``, ``ggml-org/llama.cpp`` and
    ``someone/evil_pkg`` passed as code, and GitHub names look just like it.
    """
    found, quoted = [], quoted.lower()
    for match in REPOSITORY.finditer(text):
        name = match[0]
        code = bool(FILE_LIKE.search(name) or "_" in match[2]) and re.search(
            rf"(?<![\w./-]){re.escape(name.lower())}(?![\w/-])", quoted) is not None
        if name.lower() in topic_repositories or not code:
            found.append(name)
    return found


def check_repositories(text: str, topic_repositories: set[str], quoted: str = "") -> str:
    """Check 3 (mentions); ``quoted``: the cited references' text (``repositories_in``)."""
    foreign = [name for name in repositories_in(text, topic_repositories, quoted)
               if name.lower() not in topic_repositories]
    return f"mentions {', '.join(foreign)}, not a repository of the topic" if foreign else ""


def check_markup(text: str) -> str:
    """Check 4."""
    for pattern, what in MARKUP:
        if pattern.search(text):
            return f"contains {what}"
    return ""


def check_text(text: str, numbers: list[int], sources: dict[int, Source], topic_repositories: set[str]) -> str:
    """Checks 1-4 in order; the first failure's reason, or ""."""
    quoted = "\n".join(sources[n].text for n in numbers if n in sources)
    return (check_citations(numbers, sources) or check_markup(text)
            or check_repositories(text, topic_repositories, quoted) or check_figures(text, numbers, sources))


def parse(data: dict) -> ModelDraft:
    """The answer as the contract, or ``ValueError`` naming the first thing wrong with it."""
    try:
        return ModelDraft.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"]) or "the answer"
        raise ValueError(f"the answer does not follow the contract: {where}: {error['msg']}") from exc


def check(draft: ModelDraft, sources: dict[int, Source], topic_repositories: set[str]) -> Checked:
    """Apply checks 1-6 to every part of ``draft``; see the module docstring."""
    repositories = {name.lower() for name in topic_repositories}
    result = Checked()
    headline = " ".join(draft.headline.split())
    reason = (check_markup(headline) or check_repositories(headline, repositories)
              or ("has more than 300 characters" if len(headline) > HEADLINE_MAX else "")
              or ("carries a citation" if CITATION.search(headline) else "")
              or ("is empty" if not headline else ""))
    if reason:
        result.drop("headline", headline, reason)
    else:
        result.headline = headline
    for part in ("summary", "body"):
        for item in getattr(draft, part):
            reason = check_text(item.text, numbers_in(item.text, item.cites), sources, repositories)
            if not reason and part == "summary" and len(sentences(item.text)) > 1:
                reason = f"holds {len(sentences(item.text))} sentences; a summary item is one sentence"
            if not reason and part == "summary" and len(result.summary) == SUMMARY_MAX:
                reason = f"the summary has at most {SUMMARY_MAX} sentences"
            if reason:
                result.drop(part, item.text, reason)
            else:
                getattr(result, part).append(item)
    for item in draft.action_items:
        numbers = numbers_in(item.text, item.cites)
        reason = check_text(item.text, numbers, sources, repositories)
        if not reason and item.repository.lower() not in {sources[n].repository.lower() for n in numbers}:
            reason = f"its repository {item.repository} is not that of a reference it cites"
        if not reason and item.repository.lower() not in repositories:  # a citation from another topic's repository
            reason = f"its repository {item.repository} is not a repository of the topic"
        if not reason and len(result.action_items) == ACTIONS_MAX:
            reason = f"at most {ACTIONS_MAX} action items"
        if reason:
            result.drop("action item", item.text, reason)
        else:
            result.action_items.append(item)
    for entry in draft.faq:
        numbers = numbers_in(entry.answer, entry.cites)
        quoted = "\n".join(sources[n].text for n in numbers if n in sources)
        reason = check_text(entry.answer, numbers, sources, repositories) or check_markup(entry.question) or (
            check_repositories(entry.question, repositories, quoted)) or check_figures(entry.question, numbers, sources)
        if reason:
            result.drop("FAQ", f"{entry.question} — {entry.answer}", reason)
        else:
            result.faq.append(entry)
    if not result.headline:
        result.fallback = f"the model's headline was dropped ({result.dropped[0]['reason']})"
    elif not result.summary:
        result.fallback = "every summary sentence the model wrote was dropped"
    return result
