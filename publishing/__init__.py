"""What every publishable thing shares: statuses and who may change them, the workflow admin,
Markdown rendering and sanitising, full-text storage, reader listings, feeds and structured data."""
