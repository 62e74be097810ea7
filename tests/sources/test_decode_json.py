"""Dumps and live pages are decoded by msgspec, read as json.loads reads them; a dump's errors keep
the standard library's line and column."""
from __future__ import annotations

import json
import math

import pytest

from kplan.errors import InputError
from kplan.sources.files import decode_json, iter_documents

SAME_AS_STDLIB = [
    b'{"a": 1, "a": 2}',  # the last of repeated keys, as json.loads keeps it
    b'[123456789012345678901234567890, -0.0, 1E5, 1.5e-7, 0.1]',
    b'{"x": "\\u00e9\\n\\t\\"", "y": [true, false, null, {}, []]}',
    b'["\\ud800"]',  # a lone surrogate escape: msgspec refuses it, json.loads reads it
    b'[1e400]',  # out of a double's range: inf for json.loads
]


@pytest.mark.parametrize("data", SAME_AS_STDLIB)
def test_decoded_as_json_loads_decodes(data):
    assert decode_json(data) == json.loads(data)


def test_nan_as_json_loads_reads_it():
    (value,) = decode_json(b"[NaN]")
    assert math.isnan(value)


def test_not_json_is_a_value_error_with_its_place():
    with pytest.raises(json.JSONDecodeError) as info:
        decode_json(b'{"items": [1, 2,]}')
    assert (info.value.lineno, info.value.colno) == (1, 17)


def test_a_malformed_dump_names_line_and_column(tmp_path):
    path = tmp_path / "cluster.json"
    path.write_bytes(b'{"kind": "List",\n "items": [\n  {"kind": "Node" "metadata": {}}]}')
    with pytest.raises(InputError, match=r"cluster.json: malformed JSON at line 3, column 19: Expecting ','"):
        list(iter_documents(str(path)))


def test_a_dump_that_is_not_utf8(tmp_path):
    path = tmp_path / "cluster.json"
    path.write_bytes(b'{"kind": "Node", "metadata": {"name": "\xff"}}')
    with pytest.raises(InputError, match=r"cluster.json: not UTF-8 text"):
        list(iter_documents(str(path)))
