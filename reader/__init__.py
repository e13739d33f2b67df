"""What readers see across content: home, search, sitemaps, and the page cache with its invalidation."""
