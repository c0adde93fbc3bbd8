"""Reading a rendered report back: its tables as dicts, its images as decoded PNGs."""

from __future__ import annotations

import base64
import io
import re

from bs4 import BeautifulSoup

FORBIDDEN = re.compile(r"\b(nan|NaN|None|inf|null|undefined)\b")


def soup(html: str) -> BeautifulSoup:
    return BeautifulSoup(html, "html.parser")


def table_rows(doc: BeautifulSoup, table_id: str) -> list[dict[str, str]]:
    """Rows of ``<table id=table_id>`` keyed by the header cells' text."""
    table = doc.find("table", id=table_id)
    assert table is not None, f"no table #{table_id}"
    head = [th.get_text(strip=True) for th in table.find("thead").find_all("th")]
    rows = []
    for tr in table.find("tbody").find_all("tr"):
        cells = [td.get_text(" ", strip=True) for td in tr.find_all("td")]
        assert len(cells) == len(head), f"#{table_id}: row {cells} does not match header {head}"
        rows.append(dict(zip(head, cells, strict=True)))
    return rows


def find_row(rows: list[dict[str, str]], metric: str, segment: str) -> dict[str, str]:
    hits = [r for r in rows if r["metric"].endswith(metric) and r["segment"] == segment]
    assert len(hits) == 1, f"expected one row {metric!r} / {segment!r}, found {len(hits)}"
    return hits[0]


def png_sizes(doc: BeautifulSoup) -> list[tuple[int, int]]:
    """(width, height) of every embedded image, decoded from its data URI."""
    from PIL import Image

    sizes = []
    for img in doc.find_all("img"):
        src = img["src"]
        assert src.startswith("data:image/png;base64,"), f"image is not embedded: {src[:60]}"
        with Image.open(io.BytesIO(base64.b64decode(src.split(",", 1)[1]))) as im:
            im.load()
            sizes.append(im.size)
    return sizes


def visible_text(doc: BeautifulSoup) -> str:
    body = BeautifulSoup(str(doc), "html.parser")
    for tag in body(["style", "script"]):
        tag.decompose()
    return body.get_text(" ", strip=True)


BROWSER_FACTS = """
const tables = [...document.querySelectorAll('table')].map(t => ({
  id: t.id,
  rows: t.tBodies.length ? t.tBodies[0].rows.length : 0,
  empty: [...t.querySelectorAll('tbody td')].filter(td => td.textContent.trim() === '').length,
  visible: t.offsetParent !== null || t.closest('details') !== null,
}));
const images = [...document.images].map(i => ({complete: i.complete, w: i.naturalWidth, h: i.naturalHeight,
                                               shown: i.getBoundingClientRect().width}));
return {tables, images, text: document.body.innerText, first: document.body.firstElementChild.id,
        height: document.body.scrollHeight, title: document.title};
"""


def browser_facts(browser, path, screenshot=None) -> dict:
    """Open ``path`` in the headless browser; tables, decoded images, visible text (and a screenshot)."""
    browser.set_window_size(1300, 1800)
    browser.get(path.resolve().as_uri())
    browser.execute_script("return document.readyState")
    facts = browser.execute_script(BROWSER_FACTS)
    if screenshot is not None:
        browser.set_window_size(1300, min(int(facts["height"]) + 60, 16000))
        browser.save_screenshot(str(screenshot))
    return facts


def assert_readable(facts: dict) -> None:
    """Tables filled, every image decoded with a size, no nan/None anywhere a person reads."""
    assert facts["tables"], "no tables"
    for t in facts["tables"]:
        assert t["rows"] > 0 and t["empty"] == 0, t
    assert facts["images"], "no images"
    for i in facts["images"]:
        assert i["complete"] and i["w"] > 100 and i["h"] > 50 and i["shown"] > 100, i
    bad = FORBIDDEN.search(facts["text"])
    assert bad is None, facts["text"][max(0, bad.start() - 80) : bad.end() + 80]


FIRST_SCREEN = """
const box = e => { const r = e.getBoundingClientRect(); return {id: e.id, metric: e.dataset.metric || '',
  top: r.top, bottom: r.bottom, left: r.left, right: r.right, text: e.innerText,
  arms: e.querySelectorAll('.card-arm').length}; };
const all = sel => [...document.querySelectorAll(sel)].map(box);
return {width: window.innerWidth, height: window.innerHeight,
        scroll_width: document.documentElement.scrollWidth,
        health: all('#health'), verdicts: all('.verdict-box'), cards: all('.card'),
        mechanism: all('.mechanism'), revision: all('#revision, #revisions-earlier'),
        panels: [...document.images].filter(i => i.complete && i.naturalWidth > 0).map(i => i.dataset.panels || '')};
"""


def first_screen(browser, path, width: int = 1400, height: int = 900) -> dict:
    """Open ``path`` with a ``width`` × ``height`` viewport (the window sized so the page gets
    exactly that) and return where the decision's parts are drawn, and the page's width."""
    browser.set_window_size(width, height)
    browser.get(path.resolve().as_uri())
    inner = browser.execute_script("return [window.innerWidth, window.innerHeight]")
    browser.set_window_size(2 * width - inner[0], 2 * height - inner[1])
    facts = browser.execute_script(FIRST_SCREEN)
    assert (facts["width"], facts["height"]) == (width, height), facts
    return facts


def assert_on_first_screen(facts: dict, *groups: str) -> None:
    """Every element of ``groups`` (keys of :data:`FIRST_SCREEN`) is drawn inside the first
    viewport, and the page has no horizontal scroll."""
    assert facts["scroll_width"] <= facts["width"], f"horizontal scroll: {facts['scroll_width']} px"
    for group in groups:
        assert facts[group], f"nothing of {group} on the page"
        for e in facts[group]:
            inside = 0 <= e["top"] and e["bottom"] <= facts["height"] and 0 <= e["left"] and e["right"] <= facts["width"]
            assert inside, f"{group} {e['id'] or e['metric']} is drawn at {e} outside {facts['width']}x{facts['height']}"
