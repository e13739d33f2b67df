"""Text as an editor means it, whatever the browser sent."""


def normalised(value):
    """``value`` with line endings unified and trailing whitespace dropped, in strings nested at any depth.

    A browser posts a textarea with ``\\r\\n`` line endings and the admin form strips the ends, so
    a text saved in the admin unchanged is byte-for-byte different from what was stored yet the
    same text: compared raw, it would count as edited (a draft never refreshed again, an edit
    conflict where there is only the other side's change).
    """
    if isinstance(value, str):
        lines = value.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        return "\n".join(line.rstrip() for line in lines).strip()
    if isinstance(value, (list, tuple)):
        return [normalised(item) for item in value]
    return value
