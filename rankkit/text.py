"""Text helpers that every reader and writer shares (no numpy, nothing of rankkit's).

    printable(text)   a token for a one-line message: shortened, control characters escaped
    from_utf8(raw)    bytes read from a file as text that gives the same bytes back (docids)
    utf8(text)        the bytes of such text: UTF-8, undecodable input bytes restored

Docids and other free text in data files are decoded once, here, with `surrogateescape`: a byte
that is not UTF-8 becomes a lone surrogate, and `utf8` turns it back into that byte, so that a
docid written back out (a ranked list, a TREC run, an SVMlight file) has the bytes of the input.
"""

from __future__ import annotations


def printable(text: str, limit: int = 60) -> str:
    """`text` shortened to `limit` characters, control characters escaped: it stays on one line."""
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def from_utf8(raw: bytes) -> str:
    """`raw` decoded as UTF-8; bytes that are not UTF-8 kept as surrogate escapes (`utf8` gives
    them back)."""
    return raw.decode("utf-8", "surrogateescape")


def utf8(text: str) -> bytes:
    """The bytes of `text`: UTF-8, with the surrogate escapes of undecodable input bytes (text
    read with `from_utf8`) turned back into those bytes, so that docids are written exactly as
    they were read, whatever the locale."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # other lone surrogates (from a Python caller)
        return text.encode("utf-8", "surrogatepass")
