"""The leak report's viewer filter: a field that takes an id or a name, its datalist filled as
one types with the viewers that have a finding (a save of 2,000 viewers made a select of
2,000 options, a tenth of the page and of no use)."""

from __future__ import annotations

import re

from memory.engine.leaks import stored

REPORT = "/saves/millbrook/leaks/"
SUGGESTIONS = "/saves/millbrook/leaks/viewers/"


def _options(html: str) -> list[tuple[str, str]]:
    return re.findall(r'<option value="([^"]*)">([^<]*)</option>', html)


def test_the_field_suggests_the_viewers_with_a_finding_that_hold_the_text(reader_client, millbrook):
    stored.refresh()
    every = _options(reader_client.get(f"{SUGGESTIONS}?viewer=").content.decode())
    assert [i for i, _name in every] == ["hale", "ida"]
    assert every[0] == ("hale", "Hale Morrow (hale)")
    # By name or id, casefolded; a text nobody holds offers nothing.
    assert _options(reader_client.get(f"{SUGGESTIONS}?viewer=MORROW").content.decode()) == [
        every[0]
    ]
    assert [
        i for i, _n in _options(reader_client.get(f"{SUGGESTIONS}?viewer=id").content.decode())
    ] == ["ida"]
    hostile = reader_client.get(SUGGESTIONS, {"viewer": "<script>alert(1)</script>"})
    assert (hostile.status_code, hostile.content) == (200, b"")


def test_the_page_holds_the_field_not_every_viewer(reader_client, millbrook):
    stored.refresh()
    html = reader_client.get(REPORT).content.decode()
    assert '<select id="leak-viewer"' not in html
    assert '<datalist id="leak-viewer-list"></datalist>' in html
    field = re.search(r'<input id="leak-viewer"[^>]*>', html).group(0)
    assert 'name="viewer"' in field and 'value=""' in field
    assert f'hx-get="{SUGGESTIONS}"' in field


def test_a_name_typed_into_the_field_filters_as_its_id_does(reader_client, millbrook):
    stored.refresh()
    by_id = reader_client.get(REPORT, {"viewer": "hale"}).content.decode()
    total = re.search(r'<h2 id="leak-title">([^<]*)</h2>', by_id).group(1)
    assert total.endswith(" for Hale Morrow")
    for typed in ("Hale Morrow", "  hale morrow "):
        html = reader_client.get(REPORT, {"viewer": typed}).content.decode()
        assert re.search(r'<h2 id="leak-title">([^<]*)</h2>', html).group(1) == total
        assert 'name="viewer" type="search" value="hale"' in html
    # Neither an id nor anybody's name: no entity has that id, said as before.
    assert reader_client.get(REPORT, {"viewer": "Nobody Atall"}).status_code == 404
    assert (
        reader_client.get(f"{REPORT}?format=json&viewer=Hale+Morrow").json()["count"]
        == (reader_client.get(f"{REPORT}?format=json&viewer=hale").json()["count"])
    )
