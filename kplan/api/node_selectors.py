"""Node selectors (nodeSelector maps and NodeSelectorTerms) evaluated over all nodes at once.

The semantics are those of k8s.io/component-helpers' nodeaffinity package, which the scheduler
uses: terms are ORed and a term's requirements ANDed; a term with neither matchExpressions nor
matchFields selects no node, and so does an empty term list. A requirement the label-selector
parser rejects (an invalid key or value, a non-integer Gt/Lt value, a wrong number of values)
makes its whole term select nothing; `term_errors` reports those problems in upstream's words
for the places where upstream turns them into errors (preferred terms, plugin args).

An operator outside the API's set is an InputError: the API server rejects such a pod.
"""
from __future__ import annotations

import re
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from kplan.errors import InputError

LABEL_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
FIELD_OPERATORS = ("In", "NotIn")
NAME_FIELD = "metadata.name"

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_GO_INT = re.compile(r"[+-]?[0-9]+\Z")
_NAME_PART = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]\Z")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?\Z")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")

_NAME_PART_MSG = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
                  "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
                  "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
_QUALIFIED_MSG = ("a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start "
                  "and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
                  "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS "
                  "subdomain prefix and '/' (e.g. 'example.com/MyName')")
_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
                  "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
                  "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
_LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
                    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
                    "'my_value',  or '12345', regex used for validation is "
                    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")


# -- parsing helpers -----------------------------------------------------------------------------

def parse_go_int(s: str) -> int | None:
    """Parses s as Go's strconv.ParseInt(s, 10, 64) does; None where Go returns an error."""
    if not isinstance(s, str) or not _GO_INT.match(s):
        return None
    v = int(s)
    return v if _INT64_MIN <= v <= _INT64_MAX else None


def _qualified_name_errors(key: str) -> list[str]:
    """Returns upstream's messages for a label key that is not a qualified name (IsQualifiedName)."""
    parts = key.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            return ["prefix part must be non-empty"]
        errs = []
        if len(prefix) > 253:
            errs.append("prefix part must be no more than 253 characters")
        if not _DNS1123_SUBDOMAIN.match(prefix):
            errs.append("prefix part " + _SUBDOMAIN_MSG)
        if errs:
            return errs
    else:
        return [_QUALIFIED_MSG]
    if not name:
        return ["name part must be non-empty"]
    errs = []
    if len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    if not _NAME_PART.match(name):
        errs.append(_NAME_PART_MSG)
    return errs


def _label_value_errors(value: str) -> list[str]:
    errs = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _LABEL_VALUE.match(value):
        errs.append(_LABEL_VALUE_MSG)
    return errs


def _invalid(path: str, value: Any, detail: str) -> str:
    shown = f'"{value}"' if isinstance(value, str) else "[" + " ".join(map(str, value)) + "]"
    return f"{path}: Invalid value: {shown}: {detail}"


def _values(req: Mapping) -> list[str]:
    values = req.get("values") or []
    if not isinstance(values, (list, tuple)) or not all(isinstance(v, str) for v in values):
        raise InputError(f"node selector requirement {req.get('key')!r}: values must be a list of strings, "
                         f"got {values!r}")
    return list(values)


def _operator(req: Mapping, field: bool) -> str:
    op = req.get("operator")
    allowed = FIELD_OPERATORS if field else LABEL_OPERATORS
    if op not in allowed:
        kind = "matchFields" if field else "matchExpressions"
        raise InputError(f"node selector requirement {req.get('key')!r} in {kind}: {op!r} is not a valid "
                         f"selector operator (valid: {', '.join(allowed)})")
    return op


def requirement_errors(req: Mapping, field: bool = False, path: str = "") -> list[str]:
    """Returns why upstream's selector parser rejects the requirement ([] when it parses).

    Label requirements follow labels.NewRequirement (key, value count, Gt/Lt integers, label
    values); field requirements need exactly one value. Messages carry `path` as upstream's
    field paths do, e.g. "[0].matchExpressions[0].key: Invalid value: ...".
    """
    op = _operator(req, field)
    values = _values(req)
    if field:
        if len(values) != 1:
            return [_invalid(f"{path}.values", values, "must have one element")]
        return []
    key = req.get("key") or ""
    errs = [_invalid(f"{path}.key", key, msg) for msg in _qualified_name_errors(key)]
    vpath = f"{path}.values"
    if op in ("In", "NotIn") and not values:
        errs.append(_invalid(vpath, values, "for 'in', 'notin' operators, values set can't be empty"))
    elif op in ("Exists", "DoesNotExist") and values:
        errs.append(_invalid(vpath, values, "values set must be empty for exists and does not exist"))
    elif op in ("Gt", "Lt"):
        if len(values) != 1:
            errs.append(_invalid(vpath, values, "exact-match compatibility requires one single value"))
        errs.extend(_invalid(f"{vpath}[{i}]", v, "for 'Gt', 'Lt' operators, the value must be an integer")
                    for i, v in enumerate(values) if parse_go_int(v) is None)
    for i, v in enumerate(values):
        errs.extend(_invalid(f"{vpath}[{i}]", v, msg) for msg in _label_value_errors(v))
    return errs


def is_empty_term(term: Mapping | None) -> bool:
    """Tells whether a NodeSelectorTerm has no requirement at all (it then selects no node)."""
    return not term or (not term.get("matchExpressions") and not term.get("matchFields"))


def term_errors(term: Mapping, path: str = "") -> list[str]:
    """Returns the parse errors of every requirement of a term, in upstream's order and words."""
    errs: list[str] = []
    for kind, field in (("matchExpressions", False), ("matchFields", True)):
        for j, req in enumerate(term.get(kind) or ()):
            errs.extend(requirement_errors(req, field, f"{path}.{kind}[{j}]"))
    return errs


def aggregate_message(errs: Sequence[str]) -> str:
    """Joins errors as Go's flattened error aggregate prints them."""
    return errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]"


# -- vectorized matching -------------------------------------------------------------------------

def _int_values(col) -> tuple[np.ndarray, np.ndarray]:
    """Parses a label column's distinct values once: (parsed ok per code, value per code)."""
    parsed = [parse_go_int(v) for v in col.values]
    ok = np.array([p is not None for p in parsed], dtype=bool)
    vals = np.array([p if p is not None else 0 for p in parsed], dtype=np.int64)
    return ok, vals


def requirement_mask(req: Mapping, cluster, field: bool = False) -> np.ndarray:
    """Returns the (N,) mask of nodes a NodeSelectorRequirement selects.

    `field=True` reads it as a matchFields requirement (only metadata.name has a value; nodes
    without a name are not constrained by field requirements, as upstream). A requirement the
    parser rejects selects no node, which makes its term select none.
    """
    n = cluster.n
    if requirement_errors(req, field):
        return np.zeros(n, dtype=bool)
    op = req["operator"]
    values = _values(req)
    key = req.get("key") or ""
    if field:
        if key == NAME_FIELD:
            names = np.asarray(cluster.names, dtype=object)
            eq = names == values[0]
            unnamed = names == ""
        else:  # any other field is the empty string on every node
            eq = np.full(n, values[0] == "", dtype=bool)
            unnamed = np.array([name == "" for name in cluster.names], dtype=bool)
        return (eq if op == "In" else ~eq) | unnamed
    col = cluster.label_column(key)
    if op == "In":
        return col.isin(values)
    if op == "NotIn":
        return ~col.isin(values)
    if op == "Exists":
        return col.present.copy()
    if op == "DoesNotExist":
        return ~col.present
    if not col.values:
        return np.zeros(n, dtype=bool)
    bound = parse_go_int(values[0])
    ok, vals = _int_values(col)
    present = col.present
    codes = np.where(present, col.codes, 0)
    node_ok = present & ok[codes]
    node_val = vals[codes]
    return node_ok & ((node_val > bound) if op == "Gt" else (node_val < bound))


def term_mask(term: Mapping, cluster) -> np.ndarray:
    """Returns the (N,) mask of nodes a NodeSelectorTerm selects (its requirements ANDed)."""
    mask = np.zeros(cluster.n, dtype=bool)
    if is_empty_term(term):
        return mask
    mask[:] = True
    for kind, field in (("matchExpressions", False), ("matchFields", True)):
        for req in term.get(kind) or ():
            mask &= requirement_mask(req, cluster, field)
    return mask


def node_selector_terms_mask(terms: Iterable[Mapping] | None, cluster) -> np.ndarray:
    """Returns the (N,) mask of nodes matching any of the terms (no terms: no node)."""
    mask = np.zeros(cluster.n, dtype=bool)
    for term in terms or ():
        if not is_empty_term(term):
            mask |= term_mask(term, cluster)
    return mask


def match_labels_mask(selector: Mapping[str, str] | None, cluster) -> np.ndarray:
    """Returns the (N,) mask of nodes carrying every key=value of a nodeSelector map (empty: all)."""
    mask = np.ones(cluster.n, dtype=bool)
    for key, value in (selector or {}).items():
        mask &= cluster.label_column(key).isin([str(value)])
    return mask


def describe_requirement(req: Mapping) -> str:
    """Renders a requirement the way kubectl prints selectors, e.g. "zone in (a,b)"."""
    op = req.get("operator")
    key = req.get("key") or ""
    values = req.get("values") or []
    if op == "Exists":
        return key
    if op == "DoesNotExist":
        return f"!{key}"
    if op == "Gt":
        return f"{key}>{values[0] if values else ''}"
    if op == "Lt":
        return f"{key}<{values[0] if values else ''}"
    word = "in" if op == "In" else "notin"
    return f"{key} {word} ({','.join(map(str, values))})"


def describe_terms(terms: Sequence[Mapping] | None) -> str:
    """Node selector terms as kubectl prints selectors, the terms joined by "or" (none: any node)."""
    if not terms:
        return "any node"
    return " or ".join(", ".join(describe_requirement(r) for r in t.get("matchExpressions") or ()) or "any node"
                       for t in terms)
