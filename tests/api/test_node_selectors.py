"""Node selector matching, ported from component-helpers' nodeaffinity_test.go.

Tables: TestNodeSelectorMatch, TestPreferredSchedulingTermsScore, TestNodeSelectorRequirementsAsSelector
and TestPodMatchesNodeSelectorAndAffinityTerms (staging/src/k8s.io/component-helpers/scheduling/
corev1/nodeaffinity/nodeaffinity_test.go), plus Gt/Lt parsing as labels.Requirement does it.
"""
from __future__ import annotations

import numpy as np
import pytest
from builders import cluster, node

from kplan.api.node_selectors import (
    match_labels_mask, node_selector_terms_mask, parse_go_int, requirement_errors, requirement_mask,
    term_errors, term_mask,
)
from kplan.errors import InputError

NAME_PART_MSG = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
                 "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
                 "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")


def expr(key, op, *values):
    r = {"key": key, "operator": op}
    if values:
        r["values"] = list(values)
    return r


def name_in(*names):
    return {"key": "metadata.name", "operator": "In", "values": list(names)}


def one_node(name="", labels=None):
    n = node(name or "x", labels=labels)
    n["metadata"]["name"] = name
    n["metadata"]["labels"] = dict(labels or {})
    return cluster([n])


# TestNodeSelectorMatch in nodeaffinity_test.go
@pytest.mark.parametrize("terms, name, labels, want", [
    pytest.param([{"matchExpressions": [expr("label_1", "In", "label_1_val")], "matchFields": [name_in("host_1")]}],
                 "host_1", {}, False, id="node matches field selector, but not labels"),
    pytest.param([{"matchExpressions": [expr("label_1", "In", "label_1_val")], "matchFields": [name_in("host_1")]}],
                 "host_1", {"label_1": "label_1_val"}, True, id="node matches field selector and label selector"),
    pytest.param([{"matchExpressions": [expr("label_1", "In", "label_1_val")]}, {"matchFields": [name_in("host_1")]}],
                 "host_1", {}, True, id="second term matches"),
])
def test_node_selector_match(terms, name, labels, want):
    assert node_selector_terms_mask(terms, one_node(name, labels)).tolist() == [want]


def test_node_selector_parse_errors():
    # TestNodeSelectorMatch "invalid field selector and label selector": the strict parser reports
    # both bad terms; the lenient matcher used for pods lets those terms select nothing.
    terms = [
        {"matchFields": [name_in("host_1", "host_2")]},
        {"matchExpressions": [expr("label_1", "In", "label_1_val")], "matchFields": [name_in("host_1")]},
        {"matchExpressions": [expr("invalid key", "In", "label_value")]},
    ]
    errs = [e for i, t in enumerate(terms) for e in term_errors(t, f"nodeSelectorTerms[{i}]")]
    assert len(errs) == 2
    assert errs[0].startswith("nodeSelectorTerms[0].matchFields[0].values: Invalid value: ")
    assert errs[0].endswith(": must have one element")
    assert errs[1] == f'nodeSelectorTerms[2].matchExpressions[0].key: Invalid value: "invalid key": {NAME_PART_MSG}'
    c = one_node("host_1", {"label_1": "label_1_val"})
    assert node_selector_terms_mask([terms[0], terms[2]], c).tolist() == [False]
    assert node_selector_terms_mask(terms, c).tolist() == [True]


def preferred_score(prefs, c):
    total = np.zeros(c.n, dtype=np.int64)
    for p in prefs:
        if p["weight"]:
            total += np.where(term_mask(p["preference"], c), p["weight"], 0)
    return total


# TestPreferredSchedulingTermsScore in nodeaffinity_test.go
def test_preferred_scheduling_terms_score():
    prefs = [
        {"weight": 5, "preference": {"matchFields": [name_in("host_1")]}},
        {"weight": 7, "preference": {"matchExpressions": [expr("unknown_label", "In", "unknown_label_val")]}},
        {"weight": 11, "preference": {"matchExpressions": [expr("label_1", "In", "label_1_val")]}},
    ]
    c = one_node("host_1", {"label_1": "label_1_val"})
    assert preferred_score(prefs, c).tolist() == [16]  # "first and third term match"


def test_preferred_scheduling_terms_errors():
    prefs = [
        {"matchFields": [name_in("host_1", "host_2")]},
        {"matchExpressions": [expr("label_1", "In", "label_1_val")], "matchFields": [name_in("host_1")]},
        {"matchExpressions": [expr("invalid key", "In", "label_value")]},
    ]
    errs = [e for i, t in enumerate(prefs) for e in term_errors(t, f"[{i}]")]
    assert errs[0].startswith("[0].matchFields[0].values: ") and errs[0].endswith("must have one element")
    assert errs[1] == f'[2].matchExpressions[0].key: Invalid value: "invalid key": {NAME_PART_MSG}'


# TestNodeSelectorRequirementsAsSelector in nodeaffinity_test.go (as masks over a few nodes)
@pytest.mark.parametrize("req, want", [
    pytest.param(expr("foo", "In", "bar", "baz"), [True, True, False, False, False], id="foo in (baz,bar)"),
    pytest.param(expr("foo", "Exists", "bar", "baz"), [False] * 5, id="values set must be empty for exists"),
    pytest.param(expr("foo", "Gt", "1"), [False, False, True, False, False], id="foo>1"),
    pytest.param(expr("bar", "Lt", "7"), [False, False, False, True, False], id="bar<7"),
])
def test_requirements_as_selector(req, want):
    labels = [{"foo": "bar"}, {"foo": "baz"}, {"foo": "2"}, {"bar": "-3"}, {}]
    c = cluster([node(f"n{i}", labels=l) for i, l in enumerate(labels)])
    assert requirement_mask(req, c).tolist() == want


def test_exists_with_values_error_text():
    errs = requirement_errors(expr("foo", "Exists", "bar", "baz"), path="root[0]")
    assert len(errs) == 1 and errs[0].endswith("values set must be empty for exists and does not exist")


def test_empty_requirement_list_selects_nothing():
    c = cluster([node("a")])
    assert term_mask({"matchExpressions": []}, c).tolist() == [False]
    assert term_mask({}, c).tolist() == [False]


def required_match(spec, name, labels):
    c = one_node(name, labels)
    mask = match_labels_mask(spec.get("nodeSelector"), c)
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution")
    if required is not None:
        mask &= node_selector_terms_mask(required.get("nodeSelectorTerms"), c)
    return bool(mask[0])


def required(*terms):
    return {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": list(terms)}}}}


# TestPodMatchesNodeSelectorAndAffinityTerms in nodeaffinity_test.go
@pytest.mark.parametrize("spec, name, labels, want", [
    pytest.param({}, "", {}, True, id="no selector"),
    pytest.param({"nodeSelector": {"foo": "bar"}}, "", {}, False, id="missing labels"),
    pytest.param({"nodeSelector": {"foo": "bar"}}, "", {"foo": "bar"}, True, id="same labels"),
    pytest.param({"nodeSelector": {"foo": "bar"}}, "", {"foo": "bar", "baz": "blah"}, True,
                 id="node labels are superset"),
    pytest.param({"nodeSelector": {"foo": "bar", "baz": "blah"}}, "", {"foo": "bar"}, False,
                 id="node labels are subset"),
    pytest.param(required({"matchExpressions": [expr("foo", "In", "bar", "value2")]}), "", {"foo": "bar"}, True,
                 id="Pod with matchExpressions using In operator that matches the existing node"),
    pytest.param(required({"matchExpressions": [expr("kernel-version", "Gt", "0204")]}), "",
                 {"kernel-version": "0206"}, True,
                 id="Pod with matchExpressions using Gt operator that matches the existing node"),
    pytest.param(required({"matchExpressions": [expr("mem-type", "NotIn", "DDR", "DDR2")]}), "",
                 {"mem-type": "DDR3"}, True,
                 id="Pod with matchExpressions using NotIn operator that matches the existing node"),
    pytest.param(required({"matchExpressions": [expr("GPU", "Exists")]}), "", {"GPU": "NVIDIA-GRID-K1"}, True,
                 id="Pod with matchExpressions using Exists operator that matches the existing node"),
    pytest.param(required({"matchExpressions": [expr("foo", "In", "value1", "value2")]}), "", {"foo": "bar"}, False,
                 id="Pod with affinity that don't match node's labels won't schedule onto the node"),
    pytest.param({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": None}}}}, "", {"foo": "bar"}, False,
        id="Pod with a nil []NodeSelectorTerm in affinity, can't match the node's labels and won't schedule onto "
           "the node"),
    pytest.param(required(), "", {"foo": "bar"}, False,
                 id="Pod with an empty []NodeSelectorTerm in affinity, can't match the node's labels and won't "
                    "schedule onto the node"),
    pytest.param(required({"matchExpressions": []}), "", {"foo": "bar"}, False,
                 id="Pod with empty MatchExpressions is not a valid value will match no objects and won't schedule "
                    "onto the node"),
    pytest.param({}, "", {"foo": "bar"}, True, id="Pod with no Affinity will schedule onto a node"),
    pytest.param({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": None}}}, "",
                 {"foo": "bar"}, True, id="Pod with Affinity but nil NodeSelector will schedule onto a node"),
    pytest.param(required({"matchExpressions": [expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER")]}), "",
                 {"GPU": "NVIDIA-GRID-K1"}, True,
                 id="Pod with multiple matchExpressions ANDed that matches the existing node"),
    pytest.param(required({"matchExpressions": [expr("GPU", "Exists"), expr("GPU", "In", "AMD", "INTER")]}), "",
                 {"GPU": "NVIDIA-GRID-K1"}, False,
                 id="Pod with multiple matchExpressions ANDed that doesn't match the existing node"),
    pytest.param(required({"matchExpressions": [expr("foo", "In", "bar", "value2")]},
                          {"matchExpressions": [expr("diffkey", "In", "wrong", "value2")]}), "", {"foo": "bar"}, True,
                 id="Pod with multiple NodeSelectorTerms ORed in affinity, matches the node's labels and will "
                    "schedule onto the node"),
    pytest.param({"nodeSelector": {"foo": "bar"}, **required({"matchExpressions": [expr("foo", "Exists")]})}, "",
                 {"foo": "bar"}, True,
                 id="Pod with an Affinity and a PodSpec.NodeSelector(the old thing that we are deprecating) both are "
                    "satisfied, will schedule onto the node"),
    pytest.param({"nodeSelector": {"foo": "bar"}, **required({"matchExpressions": [expr("foo", "Exists")]})}, "",
                 {"foo": "barrrrrr"}, False,
                 id="Pod with an Affinity matches node's labels but the PodSpec.NodeSelector(the old thing that we "
                    "are deprecating) is not satisfied, won't schedule onto the node"),
    pytest.param(required({"matchExpressions": [expr("foo", "NotIn", "invalid value: ___@#$%^")]}), "",
                 {"foo": "bar"}, False,
                 id="Pod with an invalid value in Affinity term won't be scheduled onto the node"),
    pytest.param(required({"matchFields": [name_in("node_1")]}), "node_1", {}, True,
                 id="Pod with matchFields using In operator that matches the existing node"),
    pytest.param(required({"matchFields": [name_in("node_1")]}), "node_2", {}, False,
                 id="Pod with matchFields using In operator that does not match the existing node"),
    pytest.param(required({"matchFields": [name_in("node_1")]}, {"matchExpressions": [expr("foo", "In", "bar")]}),
                 "node_2", {"foo": "bar"}, True,
                 id="Pod with two terms: matchFields does not match, but matchExpressions matches"),
    pytest.param(required({"matchFields": [name_in("node_1")], "matchExpressions": [expr("foo", "In", "bar")]}),
                 "node_2", {"foo": "bar"}, False,
                 id="Pod with one term: matchFields does not match, but matchExpressions matches"),
    pytest.param(required({"matchFields": [name_in("node_1")], "matchExpressions": [expr("foo", "In", "bar")]}),
                 "node_1", {"foo": "bar"}, True,
                 id="Pod with one term: both matchFields and matchExpressions match"),
    pytest.param(required({"matchFields": [name_in("node_1")]},
                          {"matchExpressions": [expr("foo", "In", "not-match-to-bar")]}),
                 "node_2", {"foo": "bar"}, False,
                 id="Pod with two terms: both matchFields and matchExpressions do not match"),
])
def test_pod_matches_node_selector_and_affinity_terms(spec, name, labels, want):
    assert required_match(spec, name, labels) is want


# Gt/Lt: labels.Requirement parses both sides with strconv.ParseInt(s, 10, 64).
@pytest.mark.parametrize("op, bound, node_values, want", [
    pytest.param("Gt", "5", ["6", "5", "+7", "-1", "abc", "1e3", " 9", "9223372036854775808", None],
                 [True, False, True, False, False, False, False, False, False], id="gt"),
    pytest.param("Lt", "3", ["2", "3", "10", "x", None], [True, False, False, False, False], id="lt"),
    # A bound must also be a valid label value, which cannot start with '-' (labels.NewRequirement).
    pytest.param("Lt", "-2", ["-3", "0"], [False, False], id="negative bound is not a label value"),
    pytest.param("Gt", "abc", ["6", "7"], [False, False], id="non-integer bound selects nothing"),
    pytest.param("Lt", "1_000", ["6"], [False], id="underscores are not Go base-10 integers"),
])
def test_gt_lt(op, bound, node_values, want):
    c = cluster([node(f"n{i}", labels={"v": v} if v is not None else {}) for i, v in enumerate(node_values)])
    assert requirement_mask(expr("v", op, bound), c).tolist() == want


def test_gt_non_integer_error_text():
    assert requirement_errors(expr("v", "Gt", "abc"), path="[0].matchExpressions[0]") == [
        "[0].matchExpressions[0].values[0]: Invalid value: \"abc\": for 'Gt', 'Lt' operators, the value must be "
        "an integer"]


def test_parse_go_int():
    assert parse_go_int("0204") == 204
    assert parse_go_int("-9223372036854775808") == -(1 << 63)
    assert parse_go_int("9223372036854775808") is None
    assert parse_go_int("") is None


@pytest.mark.parametrize("req, field", [
    pytest.param(expr("foo", "Equals", "bar"), False, id="unknown label operator"),
    pytest.param({"key": "metadata.name", "operator": "Exists"}, True, id="matchFields only allows In and NotIn"),
])
def test_invalid_operator_is_input_error(req, field):
    with pytest.raises(InputError):
        requirement_mask(req, cluster([node("a")]), field=field)


def test_values_must_be_strings():
    with pytest.raises(InputError):
        requirement_mask(expr("foo", "Gt", 5), cluster([node("a")]))


def test_match_fields_not_in_and_labels_mask():
    c = cluster([node("a", labels={"zone": "z1"}), node("b", labels={"zone": "z2"}), node("c")])
    assert requirement_mask({"key": "metadata.name", "operator": "NotIn", "values": ["b"]}, c, field=True).tolist() \
        == [True, False, True]
    assert requirement_mask(expr("zone", "DoesNotExist"), c).tolist() == [False, False, True]
    assert match_labels_mask({"zone": "z2"}, c).tolist() == [False, True, False]
    assert match_labels_mask({}, c).tolist() == [True, True, True]
    assert node_selector_terms_mask([], c).tolist() == [False, False, False]
