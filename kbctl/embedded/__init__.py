"""The embedded PostgreSQL's lifecycle: start or join it, one owner per data directory,
repairs after a crash, and its watchdog. ``store/`` connects to it; nothing here speaks
SQL beyond what starting and stopping a server needs."""
