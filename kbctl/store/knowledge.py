"""KnowledgeStore: a knowledge base in one PostgreSQL database, as the nouns it is made of,
each over the one connection: the embedder it was built with, the source definitions
resync runs again, the documents (sources, chunks, postings, vectors), the caches beside
them, search, the namespaces' status, and the locks that keep runs apart."""

from __future__ import annotations

import psycopg

from .caches import Caches
from .definitions import Definitions
from .documents import Documents
from .embedder import EmbedderRecord
from .locks import Locks
from .search import Search
from .status import Status


class KnowledgeStore:
    """A knowledge base in one PostgreSQL database.

    The store owns SQL; callers hand it records and get records back, through its nouns
    (``store.documents.replace(...)``, ``store.search(query)``…). Every read and write is
    fenced by namespace, and a source's chunks are always replaced in one transaction, so
    readers see the old version or the new one.
    """

    def __init__(self, conn: psycopg.Connection) -> None:
        self.conn = conn
        self.embedder = EmbedderRecord(conn)
        self.definitions = Definitions(conn)
        self.documents = Documents(conn)
        self.caches = Caches(conn)
        self.search = Search(conn, self.documents)
        self.status = Status(conn)
        self.locks = Locks(conn)
