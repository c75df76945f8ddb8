"""HTML building blocks of the report: escaped tables, sections, figures, videos, and the
page shell with its inline CSS and a small load check.

The load check sets `data-report-status` on <body> (JSON: images and videos present and
loaded, errors seen), so a headless browser can verify the page with `--dump-dom`.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence

from metasim.guards import OutKind, starts_with

# How every page starts: an existing file is replaced only when it starts so (HTML_PAGE).
PAGE_HEAD = (
    '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,">'
)
HTML_PAGE = OutKind("an HTML page written by metasim", starts_with(PAGE_HEAD.encode()))

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#222;
  background:#fafafa}
header{background:#263238;color:#fff;padding:14px 24px}
header h1{margin:0 0 4px;font-size:22px}
header .meta{font-size:13px;opacity:.85}
main{padding:8px 24px 40px;max-width:1400px}
section{background:#fff;border:1px solid #e0e0e0;border-radius:6px;margin:16px 0;
  padding:8px 16px 16px}
h2{font-size:18px;border-bottom:1px solid #eee;padding-bottom:4px}
h3{font-size:15px;margin:12px 0 6px}
table{border-collapse:collapse;font-size:13px;margin:6px 0}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:right}
th{background:#f1f3f4}
td.l,th.l{text-align:left}
td.bad{background:#fde0dc}
td.good{background:#e3f2e5}
.cols{display:flex;flex-wrap:wrap;gap:24px}
.cols>div{flex:1 1 420px;min-width:0}
figure{margin:8px 0;display:inline-block;vertical-align:top}
figure img{max-width:100%;height:auto}
figcaption{font-size:12px;color:#555;max-width:560px}
.clips{display:flex;flex-wrap:wrap;gap:14px}
.clip video{width:288px;height:216px;background:#000;display:block}
.clip figcaption{max-width:288px}
.note{font-size:12px;color:#666}
pre{font-size:11px;background:#f6f8fa;padding:8px;overflow:auto;max-height:300px}
"""

STATUS_JS = """
(function () {
  var errors = [];
  window.addEventListener("error", function (e) {
    var t = e.target && e.target.tagName ? e.target.tagName + " failed to load" : e.message;
    errors.push(String(t));
  }, true);
  function report() {
    var imgs = Array.prototype.slice.call(document.images);
    var vids = Array.prototype.slice.call(document.querySelectorAll("video"));
    var svgs = document.querySelectorAll("svg").length;
    var status = {
      images: imgs.length,
      imagesLoaded: imgs.filter(function (i) { return i.complete && i.naturalWidth > 0; }).length,
      svgs: svgs,
      videos: vids.length,
      videosReady: vids.filter(function (v) { return v.readyState >= 1 && v.duration > 0; }).length,
      errors: errors
    };
    document.body.setAttribute("data-report-status", JSON.stringify(status));
  }
  window.addEventListener("load", function () {
    report();
    document.querySelectorAll("video").forEach(function (v) {
      v.addEventListener("loadedmetadata", report);
      v.addEventListener("error", report);
    });
    setTimeout(report, 500);
    setTimeout(report, 2000);
  });
})();
"""


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def table(
    headers: Sequence[str], rows: Iterable[Sequence[object]], classes: Sequence[str] = ()
) -> str:
    """An HTML table; the first column is left-aligned. Cells are escaped unless given
    as `Raw` (already HTML). `classes` gives a CSS class per row ("" for none)."""
    head = "".join(f'<th class="{_align(i)}">{esc(h)}</th>' for i, h in enumerate(headers))
    body = []
    for r, row in enumerate(rows):
        cls = classes[r] if r < len(classes) else ""
        cells = "".join(
            f'<td class="{_align(i)}">{cell if isinstance(cell, Raw) else esc(cell)}</td>'
            for i, cell in enumerate(row)
        )
        body.append(f'<tr class="{cls}">{cells}</tr>')
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _align(column: int) -> str:
    return "l" if column == 0 else ""


class Raw(str):
    """A string that is already HTML (not escaped by `table`)."""


def rate_cell(k: int, n: int, lo: float, hi: float) -> Raw:
    """ "0.83 [0.44, 0.97] (5/6)" with a colour class for low and high rates."""
    if n == 0:
        return Raw("–")
    rate = k / n
    return Raw(f"{rate:.2f} <small>[{lo:.2f}, {hi:.2f}] ({k}/{n})</small>")


def section(title: str, body: str, anchor: str) -> str:
    return f'<section id="{esc(anchor)}"><h2>{esc(title)}</h2>{body}</section>'


def figure(uri: str, alt: str, caption: str = "") -> str:
    cap = f"<figcaption>{esc(caption)}</figcaption>" if caption else ""
    return f'<figure><img src="{uri}" alt="{esc(alt)}">{cap}</figure>'


def video(uri: str, caption: str) -> str:
    return (
        '<figure class="clip"><video controls muted loop playsinline preload="auto">'
        f'<source src="{uri}" type="video/mp4"></video>'
        f"<figcaption>{esc(caption)}</figcaption></figure>"
    )


def page(title: str, meta: str, sections: Sequence[str]) -> str:
    """The complete, self-contained HTML document."""
    return (
        f"{PAGE_HEAD}<title>{esc(title)}</title><style>{CSS}</style></head>"
        f'<body><header><h1>{esc(title)}</h1><div class="meta">{meta}</div></header>'
        f"<main>{''.join(sections)}</main><script>{STATUS_JS}</script></body></html>\n"
    )
