"""The benchmark suite behind ``make bench``: generate an archive, serve it with gunicorn, load it with wrk."""
