"""A corpus of hostile inputs and a checker for live markup in rendered HTML."""
import re
from html.parser import HTMLParser

#: Things strangers put in PR bodies, commit messages and feed entries.
CORPUS = [
    "<script>alert('s1')</script>",
    "<SCRIPT SRC=//evil.example/x.js></SCRIPT>",
    "<img src=x onerror=alert('s2')>",
    "<svg onload=alert('s3')><circle r=1 /></svg>",
    "<iframe src=\"https://evil.example/\"></iframe>",
    "<iframe srcdoc=\"<script>alert('s4')</script>\"></iframe>",
    "<a href=\"javascript:alert('s5')\">click</a>",
    "<a href=\"JaVaScRiPt:alert('s6')\">mixed case</a>",
    "<a href=\"&#106;avascript:alert('s7')\">entities</a>",
    "<a href=\" javascript:alert('s8')\">leading space</a>",
    "<a href=\"java\tscript:alert('s9')\">tab</a>",
    "[markdown link](javascript:alert('s10'))",
    "[encoded](javascript&colon;alert('s11'))",
    "![image](javascript:alert('s12'))",
    "<javascript:alert('s13')>",
    "<a href=\"vbscript:msgbox('s14')\">vb</a>",
    "<a href=\"data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==\">data</a>",
    "<div onclick=\"alert('s15')\" onmouseover=alert('s16')>handlers</div>",
    "<p style=\"background:url(javascript:alert('s17'))\">style</p>",
    "<object data=\"javascript:alert('s18')\"></object><embed src=\"javascript:alert('s19')\">",
    "<form action=\"javascript:alert('s20')\"><button>go</button></form>",
    "<math><mtext><table><mglyph><style><img src=x onerror=alert('s21')>",
    "<noscript><p title=\"</noscript><img src=x onerror=alert('s22')>\"></noscript>",
    "<!--<script>alert('s23')</script>-->",
    "<base href=\"https://evil.example/\"><meta http-equiv=\"refresh\" content=\"0;url=javascript:alert('s24')\">",
    "<details open ontoggle=alert('s25')>x</details>",
    "</script><script>alert('s26')</script>",
    "\"><script>alert('s27')</script>",
    "<style>body{display:none}</style>",
    "```html\n<script>alert('s28')</script>\n```",
]

DANGEROUS_TAGS = {"script", "iframe", "frame", "frameset", "object", "embed", "applet", "base", "style", "link", "meta",
                  "svg", "math", "form", "input", "button", "textarea", "select"}
URL_ATTRIBUTES = {"href", "src", "action", "formaction", "xlink:href", "data", "srcdoc", "background", "poster", "content"}
BAD_SCHEME = re.compile(r"^(javascript|vbscript|data):", re.IGNORECASE)


class LiveMarkupFinder(HTMLParser):
    """Collect every element or attribute a browser would act on that hostile text could have produced.

    `allowed` are (tag, attrs) of the page's own elements (its forms, stylesheet,
    JSON-LD), which the checker is told about rather than guessing.
    """

    def __init__(self, allowed_tags=frozenset()):
        super().__init__(convert_charrefs=True)
        self.allowed_tags = allowed_tags
        self.problems: list[str] = []

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag in DANGEROUS_TAGS and not self._ours(tag, attributes):
            self.problems.append(f"<{tag} {attributes}>")
        for name, value in attrs:
            if name.startswith("on"):
                self.problems.append(f"<{tag} {name}={value!r}>")
            if name == "style":
                self.problems.append(f"<{tag} style={value!r}>")
            if name in URL_ATTRIBUTES and value and BAD_SCHEME.match(re.sub(r"[\s\x00-\x1f]", "", value)):
                self.problems.append(f"<{tag} {name}={value!r}>")

    handle_startendtag = handle_starttag

    def _ours(self, tag, attributes) -> bool:
        if tag == "script":
            return attributes.get("type") == "application/ld+json"
        if tag == "meta":
            return "http-equiv" not in attributes
        if tag == "form":
            return attributes.get("class") in {"site-search", "filters", "search-form", "subscribe"}
        if tag in {"link", "input", "button", "select"}:
            return True  # the site's own head links and form controls (their attributes are still checked)
        if tag == "svg":
            return attributes.get("class") == "bar-chart"
        return False


def live_markup(html: str) -> list[str]:
    finder = LiveMarkupFinder()
    finder.feed(html)
    return finder.problems
