"""The JSONC parser: json-equal values, exact spans, comments, and errors that say where."""

from __future__ import annotations

import json

import pytest

from mcp_tether.errors import ConfigError
from mcp_tether.hosts import jsonc

STRICT_DOCS = [
    "{}",
    "[]",
    '{"a": 1, "b": [true, false, null], "c": {"d": -0.5e+3}}',
    '"caf\\u00e9 \\ud83d\\ude00 \\n\\t\\"\\\\\\/"',
    '["\u00e9\u4e2d\U0001f600", "\\u0000", 0, -0, 1E5, 12.25, 9007199254740993]',
    '{"dup": 1, "dup": 2}',
    '  \n[ 1 ,\t2 ]\r\n',
]


@pytest.mark.parametrize("text", STRICT_DOCS)
def test_strict_json_parses_to_exactly_what_json_loads_gives(text: str) -> None:
    """Values, types (int vs float), unicode and duplicate keys agree with `json`."""
    got = jsonc.loads(text)
    want = json.loads(text)
    assert got == want
    assert json.dumps(got) == json.dumps(want)


def test_comments_and_trailing_commas_are_accepted() -> None:
    """Line and block comments anywhere between tokens; trailing commas in both kinds."""
    text = """// head
    {
      /* block
         over lines */ "a": [1, 2, /* in */ 3,], // tail
      "b": {"c": "// not a comment", "d": "/* nor this */",},
    }
    /* end */"""
    assert jsonc.loads(text) == {
        "a": [1, 2, 3],
        "b": {"c": "// not a comment", "d": "/* nor this */"},
    }


def test_every_member_and_item_knows_its_exact_span() -> None:
    """Key and value spans slice the source back to their own text; commas are located."""
    text = '{ "k\\u00e9y" : [ "x" , {"n": 1.5} ] , "z": null }'
    root = jsonc.parse(text)
    assert (root.start, root.end) == (0, len(text))
    member = root.members[0]
    assert member.key == "k\u00e9y"
    assert text[member.key_start : member.key_end] == '"k\\u00e9y"'
    arr = member.value
    assert arr.text(text) == '[ "x" , {"n": 1.5} ]'
    assert [i.text(text) for i in arr.items] == ['"x"', '{"n": 1.5}']
    assert text[arr.commas[0]] == "," and arr.commas[1] == -1
    z = root.get("z")
    assert z is not None and z.value.text(text) == "null"
    assert root.get("missing") is None
    assert text[root.commas[0]] == ","


@pytest.mark.parametrize(
    ("text", "line", "column", "fragment"),
    [
        ('{\n  "a": 1\n  "b": 2\n}', 3, 3, "expected ','"),
        ('{"a": "unterminated\n}', 1, 20, "newline inside a string"),
        ('{"a": 1} /* open', 1, 10, "unterminated /* comment"),
        ('{"a": "bad \\q"}', 1, 12, "bad escape"),
        ('{"a": "\\u12"}', 1, 8, "bad \\u escape"),
        ("[1, 2] 3", 1, 8, "after the JSON value"),
        ("   ", 1, 4, "empty document"),
        ('{\n\t"a": tru\n}', 2, 7, "expected a value"),
        ("{'a': 1}", 1, 2, 'expected a "key"'),
        ('{"a" 1}', 1, 6, "expected ':'"),
        ("[1,,2]", 1, 4, "expected a value"),
        ('{"a": [1, 2}', 1, 12, "expected ',' or ']'"),
        ("/ x", 1, 1, "stray '/'"),
        ('{"a": "x', 1, 7, "unterminated string"),
    ],
)
def test_malformed_input_raises_config_error_with_line_and_column(
    text: str, line: int, column: int, fragment: str
) -> None:
    """The error names path:line:column (1-based) and says what was wrong."""
    with pytest.raises(ConfigError) as info:
        jsonc.parse(text, "cfg.json")
    err = info.value
    assert (err.line, err.column) == (line, column), err.msg
    assert fragment in err.msg
    assert err.msg.startswith(f"cfg.json:{line}:{column}: ")


def test_absurd_nesting_is_an_error_not_a_crash() -> None:
    """Thousands of nested arrays raise ConfigError instead of RecursionError."""
    with pytest.raises(ConfigError, match="nesting deeper"):
        jsonc.parse("[" * 5000 + "]" * 5000)


def test_line_col_counts_from_one() -> None:
    """Offsets map to 1-based lines and columns."""
    assert jsonc.line_col("ab\ncd", 0) == (1, 1)
    assert jsonc.line_col("ab\ncd", 4) == (2, 2)
