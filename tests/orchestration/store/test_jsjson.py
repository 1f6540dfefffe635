"""`store.jsjson.stringify` writes what JavaScript's `JSON.stringify` writes (vectors from node)."""

from __future__ import annotations

import json
import subprocess

import pytest

from corral.orchestration.store.jsjson import js_number, stringify
from tests._ci import require

# Each case is JavaScript source for a value and the same value in Python. Floats are written so both
# languages read the same double.
_CASES: list[tuple[str, object]] = [
    ("1.0", 1.0),
    ("-0.0", -0.0),
    ("0.1 + 0.2", 0.1 + 0.2),
    ("1e21", 1e21),
    ("1e20", 1e20),
    ("123e-20", 123e-20),
    ("1e-7", 1e-7),
    ("0.000001", 0.000001),
    ("-5e-324", -5e-324),
    ("1.7976931348623157e308", 1.7976931348623157e308),
    ("2 ** 53 + 2", 2**53 + 2),
    ("[1.5, 100, 1e16, -12.25]", [1.5, 100, 1e16, -12.25]),
    ('"naïve — 東京 🦀"', "naïve — 東京 🦀"),
    (
        '"quote \\" backslash \\\\ tab \\t nl \\n cr \\r bs \\b ff \\f nul \\u0000 us \\u001f del \\u007f"',
        'quote " backslash \\ tab \t nl \n cr \r bs \b ff \f nul \u0000 us \u001f del \u007f',
    ),
    ('"line sep \\u2028 para \\u2029"', "line sep \u2028 para \u2029"),
    ('"lone \\ud800 high, lone \\udfff low"', "lone \ud800 high, lone \udfff low"),
    (
        '{"b": 1, "a": {"z": [true, false, null], "y": {}}, "c": []}',
        {"b": 1, "a": {"z": [True, False, None], "y": {}}, "c": []},
    ),
    (
        '{"b": 1, "10": 2, "2": 3, "01": 4, "-1": 5, "4294967294": 6, "4294967295": 7, "a": 8}',
        {"b": 1, "10": 2, "2": 3, "01": 4, "-1": 5, "4294967294": 6, "4294967295": 7, "a": 8},
    ),
    ('["report:s:alice:run", "check", 3]', ("report:s:alice:run", "check", 3)),
]


@pytest.fixture(scope="module")
def node_vectors() -> tuple[list[str], list[str]]:
    node = require("node", "it produces the JSON.stringify vectors")
    values = ", ".join(f"({source})" for source, _ in _CASES)
    script = (
        f"const values = [{values}];"
        "process.stdout.write(JSON.stringify({compact: values.map((v) => JSON.stringify(v)),"
        " pretty: values.map((v) => JSON.stringify(v, null, 2))}));"
    )
    done = subprocess.run([node, "-e", script], capture_output=True, text=True, check=True, timeout=60)
    vectors = json.loads(done.stdout)
    return vectors["compact"], vectors["pretty"]


@pytest.mark.parametrize("index", range(len(_CASES)), ids=[source[:40] for source, _ in _CASES])
def test_stringify_matches_javascript(index: int, node_vectors: tuple[list[str], list[str]]) -> None:
    compact, pretty = node_vectors
    value = _CASES[index][1]
    assert stringify(value) == compact[index]
    assert stringify(value, indent=2) == pretty[index]


def test_numbers_are_written_as_javascript_string_of_number() -> None:
    assert [js_number(v) for v in (1.0, 1e21, 1e-7, 123e-20, 5, -0.0)] == [
        "1",
        "1e+21",
        "1e-7",
        "1.23e-18",
        "5",
        "0",
    ]


@pytest.mark.parametrize("value", [float("nan"), float("inf"), [1, float("-inf")], {"a": float("nan")}])
def test_values_javascript_would_turn_into_null_are_refused(value: object) -> None:
    with pytest.raises(ValueError, match="not a finite number"):
        stringify(value)


@pytest.mark.parametrize("value", [{1: "a"}, {"a": {1, 2}}, b"bytes", object()])
def test_values_that_are_not_json_are_refused(value: object) -> None:
    with pytest.raises(TypeError):
        stringify(value)
