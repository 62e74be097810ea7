"""Label selector strings as kubectl's -l takes them ("pool=general,zone in (a,b),!gpu").

Each requirement becomes a NodeSelectorRequirement ({key, operator, values}), so nodes are
selected with node_selectors.requirement_mask over the label columns (vectorized); pods are
selected with the label selector they make (label_selectors.Selector).
"""
from __future__ import annotations

import re
from typing import Any

import numpy as np

from kplan.api.node_selectors import requirement_errors, requirement_mask
from kplan.errors import InputError

_SET = re.compile(r"^\s*(?P<key>[^\s!=<>(),]+)\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)\s*$")
_BINARY = re.compile(r"^\s*(?P<key>[^\s!=<>(),]+)\s*(?P<op>==|=|!=|>|<)\s*(?P<value>[^\s!=<>(),]*)\s*$")
_EXISTS = re.compile(r"^\s*(?P<not>!?)\s*(?P<key>[^\s!=<>(),]+)\s*$")
_OPERATORS = {"=": "In", "==": "In", "!=": "NotIn", ">": "Gt", "<": "Lt", "in": "In", "notin": "NotIn"}


def _split(text: str) -> list[str]:
    """Splits at commas outside parentheses."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def parse_selector(text: str) -> list[dict[str, Any]]:
    """Parses a label selector string into requirements; InputError when it is malformed."""
    if not text.strip():
        return []
    reqs = []
    for part in _split(text):
        if m := _SET.match(part):
            values = [v.strip() for v in m["values"].split(",")]
            req = {"key": m["key"], "operator": _OPERATORS[m["op"]], "values": values}
        elif m := _BINARY.match(part):
            req = {"key": m["key"], "operator": _OPERATORS[m["op"]], "values": [m["value"]]}
        elif m := _EXISTS.match(part):
            req = {"key": m["key"], "operator": "DoesNotExist" if m["not"] else "Exists"}
        else:
            raise InputError(f"invalid label selector {text!r}: cannot parse {part.strip()!r}")
        errors = requirement_errors(req)
        if errors:
            raise InputError(f"invalid label selector {text!r}: {errors[0]}")
        reqs.append(req)
    return reqs


def selector_mask(text: str | None, cluster) -> np.ndarray:
    """Returns the (N,) mask of nodes whose labels match the selector (all nodes if empty)."""
    mask = np.ones(cluster.n, dtype=bool)
    for req in parse_selector(text or ""):
        mask &= requirement_mask(req, cluster)
    return mask


def pod_selector(text: str):
    """Returns the label selector of a -l string for pods (set-based operators only, as kubectl)."""
    from kplan.api.label_selectors import EVERYTHING, requirement
    where = f"invalid label selector {text!r}"
    return EVERYTHING.add(*(requirement(r["key"], r["operator"], r.get("values"), where) for r in parse_selector(text)))
