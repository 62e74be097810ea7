"""metav1.LabelSelector parsing and matching (LabelSelectorAsSelector + labels.Selector semantics)."""
from __future__ import annotations

import numpy as np
import pytest

from kplan.api.label_selectors import Requirement, label_set_selector, parse_selector
from kplan.errors import InputError

POD_LABELS = [{"app": "web", "tier": "front"}, {"app": "api"}, {}, {"tier": "back"}]


def columns(labels_list):
    def column(key):
        code_of: dict[str, int] = {}
        codes = np.array([code_of.setdefault(l[key], len(code_of)) if key in l else -1 for l in labels_list],
                         dtype=np.int32)
        return codes, code_of
    return column


@pytest.mark.parametrize("raw,want", [
    (None, [False, False, False, False]),
    ({}, [True, True, True, True]),
    ({"matchLabels": {"app": "web"}}, [True, False, False, False]),
    ({"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "api"]}]}, [True, True, False, False]),
    ({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]}, [False, True, True, True]),
    ({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, [True, False, False, True]),
    ({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, [False, True, True, False]),
    ({"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["back"]}]},
     [False, False, False, False]),
    ({"matchExpressions": [{"key": "app", "operator": "In", "values": ["nobody"]}]}, [False, False, False, False]),
], ids=["nil selects nothing", "empty selects everything", "matchLabels", "In", "NotIn matches absent keys",
        "Exists", "DoesNotExist", "ANDed", "In with unknown value"])
def test_matches_and_mask_agree(raw, want):
    selector = parse_selector(raw)
    assert [selector.matches(l) for l in POD_LABELS] == want
    assert selector.mask(columns(POD_LABELS), len(POD_LABELS)).tolist() == want


@pytest.mark.parametrize("raw,message", [
    ({"matchExpressions": [{"key": "app", "operator": "Near", "values": ["x"]}]}, "not a valid label selector operator"),
    ({"matchExpressions": [{"key": "app", "operator": "In"}]}, "values set can't be empty"),
    ({"matchExpressions": [{"key": "app", "operator": "Exists", "values": ["x"]}]}, "values set must be empty"),
    ({"matchExpressions": [{"key": "bad key!", "operator": "Exists"}]}, "invalid label key"),
    ({"matchLabels": {"app": "not valid!"}}, "invalid label value"),
    ({"matchLabels": ["app"]}, "matchLabels must be a mapping"),
], ids=["invalid operator", "In without values", "Exists with values", "bad key", "bad value", "bad matchLabels"])
def test_invalid_selectors_are_input_errors(raw, message):
    with pytest.raises(InputError, match=message):
        parse_selector(raw, "spec.x")


def test_add_and_label_set():
    base = parse_selector({"matchLabels": {"app": "web"}})
    merged = base.add(Requirement("pod-template-hash", "In", ("abc",)))
    assert merged.matches({"app": "web", "pod-template-hash": "abc"})
    assert not merged.matches({"app": "web", "pod-template-hash": "xyz"})
    assert merged.add(Requirement("pod-template-hash", "In", ("abc",))) == merged  # idempotent
    assert parse_selector(None).add(Requirement("a", "In", ("b",))).nothing
    assert label_set_selector({}).empty and str(label_set_selector({"a": "b"})) == "a=b"
