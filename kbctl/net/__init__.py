"""The SSRF guard and the one guarded HTTP client every fetch of content goes through.

Pages, sitemaps, robots.txt and llms.txt are all fetched with ``GuardedClient`` (async,
for concurrency) or ``fetch`` (one-off, sync). URLs may be checked on their own with
``check_url``. Local sites on 127.0.0.1 and other private ranges need
``NetPolicy(allow_private_network=True)``.

This package imports none of its modules: a user imports the one it needs, and loads
nothing else.
"""
