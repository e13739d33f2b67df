"""Re-renders a rename owes (``publishing.rerenders``): the digests showing a renamed topic or repository."""
from publishing import rerenders


class DigestRerender(rerenders.Rerender):
    """Digests a renamed topic or repository shows in, owed a re-render by a worker."""
