"""Turning a commit-style title ("Fix the registry") into a clause ("fixes the registry").

Pull-request titles are imperative by convention; in a headline or summary a
repository *does* the thing. Only well-known imperative verbs are conjugated;
anything else reads as "ships <title>", which is always grammatical.
"""

VERBS = frozenset("""
    accept add adopt allow apply avoid build bump cache change check clean convert correct create default define
    delete deprecate disable document drop emit enable ensure evolve expand expose extend fix graduate guard handle
    implement improve include increase decrease introduce keep land let limit log lower make mark merge migrate move
    optimize overlap pass pin port prevent propagate raise refactor register reland remove rename replace respect
    restore retry return reuse revert run serialize set ship simplify skip speed split start stop support switch
    turn tweak unify update upgrade use validate warn wrap
""".split())
VOWELS = set("aeiou")


def conjugate(verb: str) -> str:
    """The third person singular of a regular English verb: fix -> fixes, apply -> applies, add -> adds."""
    if verb.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if verb.endswith("y") and len(verb) > 1 and verb[-2] not in VOWELS:
        return verb[:-1] + "ies"
    return verb + "s"


def third_person(title: str) -> str:
    """A cleaned title as a clause whose subject is the repository."""
    first, _, rest = title.partition(" ")
    if first.lower() in VERBS and (first.islower() or first.istitle()):
        return f"{conjugate(first.lower())} {rest}".strip()
    if first.istitle() and len(first) > 1 and not any(ch.isdigit() for ch in first):
        title = first.lower() + (" " + rest if rest else "")
    return f"ships {title}"
