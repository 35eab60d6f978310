"""The URL converter for ids: any text an omnia file can carry, "/" and "%" included.

Ids come from game files, so one may hold "/" (which would split a path segment) or "%".
`to_url` escapes exactly those two ("%" first, so the escape itself round-trips); `reverse`
then quotes the "%" once more, and the server's one unquoting hands `to_python` the escaped
segment back. Every other id reads in the URL as it always did (/viewers/alice/), so
hand-written URLs keep working; only an id with "/" or "%" needs the escaped form.
"""

from __future__ import annotations

import re

from django.urls import register_converter

_ESCAPED = re.compile(r"%(25|2[Ff])")


class IdConverter:
    regex = "[^/]+"

    def to_python(self, value: str) -> str:
        return _ESCAPED.sub(lambda m: "%" if m.group(1) == "25" else "/", value)

    def to_url(self, value: str) -> str:
        return str(value).replace("%", "%25").replace("/", "%2F")


register_converter(IdConverter, "oid")
