"""Optional second-stage ranking: a cross-encoder re-scores the top candidates.

``base`` holds the protocol, ``registry`` maps a spec (``provider:model``) to a factory, and
each wire format has one module: ``results_api`` (Cohere, Jina and servers copying them:
Infinity, vLLM), ``voyage``, ``tei`` (Hugging Face text-embeddings-inference) and ``local``
(fastembed's cross-encoders, in the ``local`` extra).
"""
