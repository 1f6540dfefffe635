"""`JSON.stringify`, byte for byte: the one JSON encoder for ids, hashes and stored JSON.

The teams contracts derive ids and bindings from `JSON.stringify` of arrays
and objects (`check:` + sha256 of `JSON.stringify([reportId, name, attempt])`
and the like), and store JSON that the original TypeScript system wrote, so
corral must write exactly what JavaScript writes:

* compact separators (or `indent` spaces, as `JSON.stringify(value, null, indent)`);
* non-ASCII text as is; `"`, `\\` and control characters escaped as JavaScript
  does (`\\b \\f \\n \\r \\t`, others as `\\u00xx`), a lone surrogate as `\\udxxx`;
* numbers as `String(number)`: `1.0` is `1`, `1e21` is `1e+21`, `1e-7` is
  `1e-7`, `123e-20` is `1.23e-18`;
* object keys in JavaScript's property order: keys that are array indices
  (`"0"`, `"7"`, up to 2**32 - 2) first in ascending order, then the others as
  inserted.

Where JavaScript would write something that is not the value (`NaN` and
`Infinity` become `null`), this encoder refuses instead (`ValueError`), so
nothing durable is written from a value JavaScript would silently change.
Accepted values: `None`, `bool`, `int`, `float`, `str`, lists and tuples, and
dicts with `str` keys; anything else raises `TypeError`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from decimal import Decimal

__all__ = ["js_number", "stringify"]

_encode_string = json.encoder.encode_basestring  # type: ignore[attr-defined]
_SURROGATES = re.compile("[\ud800-\udbff][\udc00-\udfff]|[\ud800-\udfff]")
_MAX_INDEX = 2**32 - 2


def js_number(value: float) -> str:
    """`String(value)` in JavaScript for a finite number (how `JSON.stringify` writes it).

    Raises:
        ValueError: `value` is `NaN` or infinite.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not math.isfinite(value):
        raise ValueError(f"not a finite number: {value}; JSON.stringify would write null")
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    _, digit_tuple, exponent = Decimal(repr(abs(value))).as_tuple()
    digits = "".join(map(str, digit_tuple)).lstrip("0")
    assert isinstance(exponent, int)
    stripped = digits.rstrip("0")
    exponent += len(digits) - len(stripped)
    digits = stripped
    k = len(digits)
    n = exponent + k
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = f"{digits[:n]}.{digits[n:]}"
    elif -6 < n <= 0:
        text = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        mantissa = digits[0] + (f".{digits[1:]}" if k > 1 else "")
        text = f"{mantissa}e{'+' if e >= 0 else '-'}{abs(e)}"
    return sign + text


def _surrogate(match: re.Match[str]) -> str:
    text = match.group()
    if len(text) == 2:  # a pair JavaScript reads as one character
        return chr(0x10000 + ((ord(text[0]) - 0xD800) << 10) + (ord(text[1]) - 0xDC00))
    return f"\\u{ord(text):04x}"


def _string(value: str) -> str:
    encoded: str = _encode_string(value)
    return _SURROGATES.sub(_surrogate, encoded) if _SURROGATES.search(encoded) else encoded


def _is_index(key: str) -> bool:
    return key.isdecimal() and key.isascii() and (key == "0" or key[0] != "0") and int(key) <= _MAX_INDEX


def _ordered_keys(value: Mapping[str, object]) -> list[str]:
    keys = list(value)
    for key in keys:
        if not isinstance(key, str):
            raise TypeError(f"JSON object keys must be strings, not {type(key).__name__}")
    indices = sorted((key for key in keys if _is_index(key)), key=int)
    if not indices:
        return keys
    return [*indices, *(key for key in keys if not _is_index(key))]


def _encode(value: object, indent: str, level: str) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, int | float):
        return js_number(value)
    inner = level + indent
    if isinstance(value, list | tuple):
        if not value:
            return "[]"
        items = [_encode(item, indent, inner) for item in value]
        if not indent:
            return "[" + ",".join(items) + "]"
        return "[\n" + inner + f",\n{inner}".join(items) + "\n" + level + "]"
    if isinstance(value, Mapping):
        keys = _ordered_keys(value)
        if not keys:
            return "{}"
        colon = ": " if indent else ":"
        members = [_string(key) + colon + _encode(value[key], indent, inner) for key in keys]
        if not indent:
            return "{" + ",".join(members) + "}"
        return "{\n" + inner + f",\n{inner}".join(members) + "\n" + level + "}"
    raise TypeError(f"{type(value).__name__} is not a JSON value")


def stringify(value: object, *, indent: int = 0) -> str:
    """`JSON.stringify(value)` (or `JSON.stringify(value, null, indent)`), exactly as JavaScript writes it.

    Raises:
        TypeError: `value` holds something that is not a JSON value.
        ValueError: `value` holds `NaN` or an infinity.
    """
    return _encode(value, " " * indent, "")
