"""Embedders: the protocol, the registry that builds one from a spec, and the providers.

This package imports none of its modules: a user imports the one it needs, and loads
nothing else.
"""
