"""Extractors: HTML, markdown, reStructuredText and text into what the chunkers read."""

#: Bumped when the HTML reading changes what a stored page yields (its text, its heading
#: ids), so a resync reads every stored page again even where the server says unchanged.
#: 2: section wrapper ids, DocBook divisions, no made-up heading ids.
#: 3: Doxygen, Texinfo, AsciiDoc, gtk-doc and Node.js containers, empty-marker ids before
#:    headings, ``<a name>`` ids, sections inside lists (Javadoc) kept as sections.
#: 4: rustdoc's folded items as sections with their ids, rustdoc's and pydata's chrome,
#:    DocBook's and Texinfo's indexes as no content.
#: 5: headings and sections whose id names a layout element (``#footer``, ``#search``)
#:    kept as content; ``language-rust,ignore`` is rust; a ``<listing>`` of blocks; an
#:    admonition's type kept beside its custom title.
HTML_READER = 5
