"""The one output layer. Renderers are pure functions of a result that return
``Rendered`` text; each result type offers its formats through one registry
(``registry.FORMATS``); ``Output`` prints, and ``writes`` holds the few file writes.
JSON goes out one way (``jsonable.json_text``).
"""

from .formats import Formats, Rendered, check_format
from .jsonable import camel, json_text, to_jsonable
from .output import Output
from .registry import formats_for

__all__ = ["Formats", "Output", "Rendered", "camel", "check_format", "formats_for",
           "json_text", "to_jsonable"]
