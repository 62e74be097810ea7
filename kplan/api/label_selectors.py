"""metav1.LabelSelector: parsed once, matched against one label map or vectorized over label columns.

The semantics are apimachinery's (LabelSelectorAsSelector and labels.Selector): a nil selector
selects nothing, an empty one ({}) everything; matchLabels and matchExpressions are ANDed;
NotIn and DoesNotExist also match objects that lack the key. A selector the API server would
reject (an unknown operator, In/NotIn without values, Exists/DoesNotExist with values, an
invalid key or value) is an InputError: kplan reads pods that never went through admission.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np

from kplan.api.node_selectors import _label_value_errors, _qualified_name_errors
from kplan.errors import InputError

OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op == "Exists":
            return self.key in labels
        if op == "DoesNotExist":
            return self.key not in labels
        has = self.key in labels
        if op == "In":
            return has and labels[self.key] in self.values
        return not has or labels[self.key] not in self.values  # NotIn

    def __str__(self) -> str:
        if self.operator == "Exists":
            return self.key
        if self.operator == "DoesNotExist":
            return f"!{self.key}"
        if len(self.values) == 1:
            return f"{self.key}{'=' if self.operator == 'In' else '!='}{self.values[0]}"
        word = "in" if self.operator == "In" else "notin"
        return f"{self.key} {word} ({','.join(self.values)})"


@dataclass(frozen=True)
class Selector:
    """A parsed label selector: `nothing` (from a nil selector) or requirements ANDed (none: everything)."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    @property
    def empty(self) -> bool:
        """labels.Selector.Empty(): true for the match-everything selector only."""
        return not self.nothing and not self.requirements

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        if self.nothing:
            return False
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    def add(self, *requirements: Requirement) -> "Selector":
        """Returns the selector with more requirements ANDed in (a nothing selector stays nothing)."""
        if self.nothing:
            return self
        return Selector(tuple(sorted({*self.requirements, *requirements},
                                     key=lambda r: (r.key, r.operator, r.values))))

    def mask(self, column: Callable[[str], tuple[np.ndarray, Mapping[str, int]]], size: int) -> np.ndarray:
        """Returns a (size,) mask of the objects a selector matches, from per-key label columns.

        `column(key)` returns (codes, code_of): a code per object (-1 where the key is absent)
        and the code of each value.
        """
        if self.nothing:
            return np.zeros(size, dtype=bool)
        out = np.ones(size, dtype=bool)
        for r in self.requirements:
            codes, code_of = column(r.key)
            codes = codes[:size]
            if r.operator == "Exists":
                out &= codes >= 0
            elif r.operator == "DoesNotExist":
                out &= codes < 0
            else:
                wanted = np.array([code_of[v] for v in r.values if v in code_of], dtype=codes.dtype)
                hit = np.isin(codes, wanted) if len(wanted) else np.zeros(size, dtype=bool)
                out &= hit if r.operator == "In" else ~hit
        return out

    def __str__(self) -> str:
        if self.nothing:
            return "<none>"
        return ",".join(map(str, self.requirements)) or "<everything>"


NOTHING = Selector(nothing=True)
EVERYTHING = Selector()


def _fail(where: str, message: str) -> None:
    raise InputError(f"{where}: {message}" if where else message)


def requirement(key: Any, operator: Any, values: Any = None, where: str = "") -> Requirement:
    """Validates one requirement as labels.NewRequirement does; bad ones are input errors."""
    if not isinstance(key, str):
        _fail(where, f"label selector key must be a string, got {key!r}")
    errs = _qualified_name_errors(key)
    if errs:
        _fail(where, f"invalid label key {key!r}: {errs[0]}")
    if operator not in OPERATORS:
        _fail(where, f"{operator!r} is not a valid label selector operator (valid: {', '.join(OPERATORS)})")
    values = values or []
    if not isinstance(values, (list, tuple)) or not all(isinstance(v, str) for v in values):
        _fail(where, f"values of {key!r} must be a list of strings, got {values!r}")
    if operator in ("In", "NotIn") and not values:
        _fail(where, f"{key!r}: for 'in', 'notin' operators, values set can't be empty")
    if operator in ("Exists", "DoesNotExist") and values:
        _fail(where, f"{key!r}: values set must be empty for exists and does not exist")
    for v in values:
        if _label_value_errors(v):
            _fail(where, f"invalid label value {v!r} for {key!r}")
    return Requirement(key, operator, tuple(sorted(set(values))))


def parse_selector(raw: Any, where: str = "") -> Selector:
    """Parses a metav1.LabelSelector (LabelSelectorAsSelector): None selects nothing, {} everything."""
    if raw is None:
        return NOTHING
    if not isinstance(raw, Mapping):
        _fail(where, f"label selector must be a mapping, got {raw!r}")
    reqs: list[Requirement] = []
    match_labels = raw.get("matchLabels") or {}
    if not isinstance(match_labels, Mapping):
        _fail(where, f"matchLabels must be a mapping, got {match_labels!r}")
    for k, v in match_labels.items():
        reqs.append(requirement(k, "In", [v if isinstance(v, str) else str(v)], where))
    for expr in raw.get("matchExpressions") or ():
        if not isinstance(expr, Mapping):
            _fail(where, f"matchExpressions entries must be mappings, got {expr!r}")
        reqs.append(requirement(expr.get("key"), expr.get("operator"), expr.get("values"), where))
    return EVERYTHING.add(*reqs)


def label_set_selector(labels: Mapping[str, str]) -> Selector:
    """labels.SelectorFromSet: key=value for every pair (an empty set selects everything)."""
    return EVERYTHING.add(*(Requirement(k, "In", (v,)) for k, v in labels.items()))
