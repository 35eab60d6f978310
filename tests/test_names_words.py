"""Leak kinds in words where a person reads the save page (issue 28 item 4)."""

from __future__ import annotations

import pytest


@pytest.mark.django_db
def test_save_page_leak_heads_are_words(demo, editor_client) -> None:
    body = editor_client.get("/saves/demo/").content.decode()
    start = body.index('<table class="leak-counts">')
    head = body[start : body.index("</thead>", start)]
    assert head == (
        '<table class="leak-counts">\n    <thead><tr><th scope="col">viewer</th>'
        '<th scope="col">system ids</th><th scope="col">names not known</th>'
        '<th scope="col">private values</th><th scope="col">total</th></tr>'
    )
