"""to_json writes what json.dumps(indent=2, ensure_ascii=False) writes, byte for byte, by a faster path."""
from __future__ import annotations

import json
import random

import pytest

from kplan.report.render import to_json
from run_kplan import run_kplan


def stdlib(report) -> str:
    return json.dumps(report, indent=2, ensure_ascii=False) + "\n"


TRICKY = {
    "empty": [[], {}, [[]], {"": {}}, [{}]],
    "text": "é ü 中文 😀 \u2028 \u2029 \x7f \x00 \x1f \t\n\r \" \\ / </script>",
    "keys": {"x y": 1, "é": 2, "": 3},
    "numbers": [0, -1, 2**70, -2**70, 1.0, -0.0, 0.1 + 0.2, 1e16, 1e-05, 5.31317915743299e-07, 1.5e300,
                123456789.123, 2.5e-300],
    "flags": [True, False, None],
    "nested": {"a": {"b": {"c": [1, {"d": []}]}}},
    7: "an int key",
}


def test_tricky_values_are_written_as_the_standard_library_writes_them():
    assert to_json(TRICKY) == stdlib(TRICKY)


def test_random_floats_keep_their_spelling():
    rng = random.Random(25)
    floats = [rng.random() * 10 ** rng.randint(-30, 30) * rng.choice((1, -1)) for _ in range(20000)]
    assert to_json({"v": floats}) == stdlib({"v": floats})


@pytest.mark.parametrize("value", [float("nan"), float("inf"), "\ud83d"], ids=["nan", "inf", "lone-surrogate"])
def test_what_the_fast_path_cannot_read_back_is_written_by_the_standard_library(value):
    report = {"value": [value], "other": {"a": 1}}
    assert to_json(report) == stdlib(report)


def test_a_real_report_reads_back_to_the_same_bytes():
    code, out, err = run_kplan("place", "samples/pod-burstable.yaml", "-f", "samples/cluster.yaml", "-o", "json")
    assert code == 0, err
    assert out == stdlib(json.loads(out))
