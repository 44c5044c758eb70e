"""One escaping function per output format, for every string we did not write ourselves.

A server's name, version, tool names, stderr and argv, a package's metadata, a path, a
command line or a host's output are untrusted: each reaches a terminal, a Markdown page, a
JUnit file or an HTML page only through the function of that format here.

    terminal(text)        a terminal line: control characters shown (`\\x1b`), not sent
    terminal_block(text)  the same, newlines kept (a multi-line diagnosis, a stderr tail)
    rich_text(text)       `terminal`, then rich's markup escaped (cells of a rich table)
    xml_text(text)        XML 1.0: characters it forbids shown as `\\x1b` (pytest's
                          junitxml `bin_xml_escape` does the same); ElementTree escapes
                          `<`, `&` and quotes, so text is never put in CDATA
    md_text(text)         Markdown inline text, one line: HTML's special characters as
                          entities (no raw HTML: CommonMark passes it through), link
                          brackets, backslashes and pipes escaped, newlines as spaces;
                          a code span the text holds stays one (its inside is literal)
    md_cell(text)         `md_text` for a table cell: pipes escaped inside code spans too
    md_code(text)         a Markdown code span around `text` (a command line), one line
    html_text(text)       HTML text or attribute value (html.escape, quotes too)

Guarantees:
- Every function shows C0 and C1 control characters, DEL, lone surrogates (the
  `surrogateescape` form of invalid UTF-8) and the bidirectional overrides as visible
  escapes: nothing we print can move a cursor, ring a bell, rewrite a line or reorder text.
- `md_text` output rendered by a CommonMark renderer is text only: no element, no
  attribute, no link comes from the input. Backticks and emphasis stay as written: a code
  span or an emphasis holds text, never HTML.
- Each function is pure, linear in its input and safe on any `str`; only `rich_text`
  needs a library (rich, whose markup it escapes).
"""

from __future__ import annotations

import bisect
import html
import re

__all__ = ["terminal", "terminal_block", "rich_text", "xml_text", "md_text", "md_cell", "md_code",
           "html_text"]


def _visible(code: int) -> str:
    if code == 0x09:
        return "\\t"
    if code == 0x0A:
        return "\\n"
    if code == 0x0D:
        return "\\r"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


_CONTROLS = [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0),
             0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_SHOWN = {c: _visible(c) for c in _CONTROLS}
_SHOWN_BLOCK = {c: v for c, v in _SHOWN.items() if c not in (0x09, 0x0A)}
# Lone surrogates: `surrogateescape` keeps an invalid byte 0xNN as U+DCNN (shown \xNN);
# JSON's \\ud800 escapes give others. No encoder writes them, so none may pass.
_SURROGATE = re.compile("[\ud800-\udfff]")


def _surrogate(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def terminal(text: object) -> str:
    """`text` as one terminal line: every control character (newlines too) shown."""
    return _SURROGATE.sub(_surrogate, str(text).translate(_SHOWN))


def terminal_block(text: object) -> str:
    """`text` for a terminal, its newlines and tabs kept; every other control shown.
    A CR is shown: a bare one would rewrite the line it ends."""
    return _SURROGATE.sub(_surrogate, str(text).translate(_SHOWN_BLOCK))


def rich_text(text: object) -> str:
    """`terminal(text)` for a rich table cell or line: `[bold]`, `[/]` stay text."""
    # rich only here: the guard and the helper name what they left through `terminal`.
    from rich.markup import escape as rich_escape

    return rich_escape(terminal(text))


# XML 1.0 section 2.2: Char ::= #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] |
# [#x10000-#x10FFFF]. Anything else makes the document not well-formed.
_XML_ILLEGAL = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_XML_SHOWN = {c: v for c, v in _SHOWN.items() if c not in (0x09, 0x0A, 0x0D)}


def xml_text(text: object) -> str:
    """`text` legal in XML 1.0 (text or attribute), every control but tab/LF/CR shown.
    For ElementTree, which escapes the markup characters itself."""
    s = str(text).translate(_XML_SHOWN)
    return _XML_ILLEGAL.sub(lambda m: _surrogate(m) if 0xD800 <= ord(m.group()) <= 0xDFFF
                            else _visible(ord(m.group())), s)


_MD = str.maketrans({"\\": "\\\\", "&": "&amp;", "<": "&lt;", ">": "&gt;", "|": "\\|",
                     "[": "\\[", "]": "\\]"})
_TICKS = re.compile("`+")


def md_text(text: object, *, in_table: bool = False) -> str:
    """`text` as Markdown inline text on one line (a list item, a heading, a paragraph):
    `<`, `>`, `&` as entities, so no raw HTML; `[`, `]` and `\\` escaped, so no link or
    image; `|` escaped; line breaks as spaces; every other control character shown.

    A code span (a run of backticks closed by a run of the same length, CommonMark 6.1)
    is kept as one, its inside left as written: a renderer shows a code span's inside
    literally, so `<its command>` in one stays readable and can never be an element.
    Outside code spans there is no `<` left, so no HTML tag or autolink can take
    precedence over a span boundary (CommonMark 6.1): the renderer sees the same spans."""
    s = terminal(re.sub(r"\r\n|\r|\n", " ", str(text)))
    runs = list(_TICKS.finditer(s))
    by_length: dict[int, list[int]] = {}  # run length -> indexes in `runs`, ascending
    for i, run in enumerate(runs):
        by_length.setdefault(len(run.group()), []).append(i)
    out: list[str] = []
    at = 0  # the end of what is written
    i = 0
    while i < len(runs):
        same = by_length[len(runs[i].group())]
        k = bisect.bisect_right(same, i)
        if k == len(same):  # no closing run of that length: these backticks are text
            i += 1
            continue
        opening, closing = runs[i], runs[same[k]]
        inside = s[opening.end():closing.start()]
        out += [s[at:opening.start()].translate(_MD), opening.group(),
                inside.replace("|", "\\|") if in_table else inside, closing.group()]
        at = closing.end()
        i = same[k] + 1
    out.append(s[at:].translate(_MD))
    return "".join(out)


def md_cell(text: object) -> str:
    """`text` as one Markdown table cell: `md_text` with pipes escaped inside code spans
    too, as GFM asks (a table is split into cells before code spans are read)."""
    return md_text(text, in_table=True)


def md_code(text: object, *, in_table: bool = False) -> str:
    """`text` as a Markdown code span on one line (literal: no HTML, no escapes inside).
    `in_table`: pipes escaped as GFM asks of a code span in a table cell."""
    s = terminal(re.sub(r"\r\n|\r|\n", " ", str(text)))
    if in_table:
        s = s.replace("|", "\\|")
    longest = max((len(run) for run in re.findall("`+", s)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if s.startswith("`") or s.endswith("`") or not s.strip(" ") else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def html_text(text: object) -> str:
    """`text` for HTML (an element's text or a quoted attribute): `<>&"'` escaped, every
    control character but newline and tab shown."""
    return html.escape(terminal_block(text), quote=True)
