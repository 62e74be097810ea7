"""CEL selectors of device classes and requests, as the structured allocator evaluates them
(k8s.io/dynamic-resource-allocation/cel).

An expression sees one variable, `device`, with `driver`, `attributes` and `capacity`: attributes
and capacities by domain, then by identifier (an unqualified name belongs to the driver's domain),
so `device.attributes["gpu.example.com"].model` reads the attribute "model" of a gpu.example.com
device. A domain the device has nothing in reads as an empty map (newStringInterfaceMapWithDefault),
so only a missing identifier is an error. Capacities are Quantities and version attributes
semantic versions, with the Kubernetes CEL libraries' functions on them (quantity(), compareTo,
isGreaterThan, semver(), major(), ...); the strings and optional extensions are there as in
Kubernetes' base environment.

Evaluation uses cel-expr-python, the CEL project's own runtime (C++), which kplan imports only when
a run evaluates a selector. Quantities and versions are passed to it as one-key maps holding their
exact value, so that CEL's equality compares them by value as Kubernetes' types do.
"""
from __future__ import annotations

import re
from fractions import Fraction
from functools import total_ordering
from typing import Any, Callable, Mapping

from kplan.api.dra import Version, _SEMVER
from kplan.api.quantity import InvalidQuantity, parse_quantity

QUANTITY_KEY = "kubernetes.io/quantity"
SEMVER_KEY = "kubernetes.io/semver"
_LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"|\'((?:[^\'\\]|\\.)*)\'')


class CelError(Exception):
    """An expression that does not compile, or an evaluation that fails (the runtime's words)."""


def _quantity_value(q: Fraction) -> dict:
    return {QUANTITY_KEY: f"{q.numerator}/{q.denominator}"}


def _fraction(q: Mapping) -> Fraction:
    return Fraction(q[QUANTITY_KEY])


@total_ordering
class _Semver:
    """A semantic version ordered as semver 2.0.0 orders them (build metadata ignored)."""

    def __init__(self, text: str):
        match = _SEMVER.match(text)
        if match is None:
            raise ValueError(f"could not parse {text!r} as semver")
        self.core = tuple(int(x) for x in match.group(1, 2, 3))
        self.pre = match.group(4)

    def _key(self):
        if self.pre is None:
            return self.core, (1,)
        parts = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in self.pre.split("."))
        return self.core, (0, parts)

    def __eq__(self, other):
        return self._key() == other._key()

    def __lt__(self, other):
        return self._key() < other._key()


def _semver_value(text: str) -> dict:
    return {SEMVER_KEY: text.split("+", 1)[0]}


def _normalized(text: str) -> str:
    """semver(s, true): a leading "v" dropped and missing minor or patch filled with 0."""
    text = text[1:] if text.startswith("v") else text
    match = re.match(r"(\d+)(?:\.(\d+))?(?:\.(\d+))?(.*)\Z", text)
    if not match:
        return text
    parts = [str(int(p)) if p is not None else "0" for p in match.group(1, 2, 3)]
    return ".".join(parts) + match.group(4)


def _parse_semver(text: str, normalize: bool = False) -> dict:
    text = _normalized(text) if normalize else text
    _Semver(text)  # raises for an invalid version
    return _semver_value(text)


def _is_semver(text: str, normalize: bool = False) -> bool:
    try:
        _parse_semver(text, normalize)
    except ValueError:
        return False
    return True


def _cmp(a, b) -> int:
    return (a > b) - (a < b)


def _quantity(text: str) -> dict:
    try:
        return _quantity_value(parse_quantity(text))
    except InvalidQuantity as err:
        raise ValueError(str(err)) from None


def _is_quantity(text: str) -> bool:
    try:
        parse_quantity(text)
    except InvalidQuantity:
        return False
    return True


def _as_integer(q: Mapping) -> int:
    value = _fraction(q)
    if value.denominator != 1 or not -(1 << 63) <= value.numerator < (1 << 63):
        raise ValueError("cannot convert value to integer")
    return value.numerator


def _plus(q: Mapping, other: Any, sign: int) -> dict:
    other_value = _fraction(other) if isinstance(other, Mapping) else Fraction(other)
    return _quantity_value(_fraction(q) + sign * other_value)


def _library(cel) -> list:
    """The Kubernetes quantity and semver libraries as cel-expr-python function declarations."""
    t = cel.Type
    q = t.Map(t.STRING, t.DYN)

    def decl(name: str, *overloads: tuple) -> Any:
        return cel.FunctionDecl(name, [cel.Overload(oid, ret, params, is_member=member, impl=impl)
                                       for oid, ret, params, member, impl in overloads])

    def member(name: str, ret, impl: Callable, *params) -> Any:
        return decl(name, (f"{name}_member_{len(params)}", ret, [q, *params], True, impl))

    semver_of = lambda v: _Semver(v[SEMVER_KEY])  # noqa: E731
    return [
        decl("quantity", ("quantity_string", q, [t.STRING], False, _quantity)),
        decl("isQuantity", ("is_quantity_string", t.BOOL, [t.STRING], False, _is_quantity)),
        decl("semver", ("semver_string", q, [t.STRING], False, _parse_semver),
             ("semver_string_bool", q, [t.STRING, t.BOOL], False, _parse_semver)),
        decl("isSemver", ("is_semver_string", t.BOOL, [t.STRING], False, _is_semver),
             ("is_semver_string_bool", t.BOOL, [t.STRING, t.BOOL], False, _is_semver)),
        member("isInteger", t.BOOL, lambda a: _fraction(a).denominator == 1),
        member("asInteger", t.INT, _as_integer),
        member("asApproximateFloat", t.DOUBLE, lambda a: float(_fraction(a))),
        member("sign", t.INT, lambda a: _cmp(_fraction(a), 0)),
        decl("add", ("quantity_add", q, [q, q], True, lambda a, b: _plus(a, b, 1)),
             ("quantity_add_int", q, [q, t.INT], True, lambda a, b: _plus(a, b, 1))),
        decl("sub", ("quantity_sub", q, [q, q], True, lambda a, b: _plus(a, b, -1)),
             ("quantity_sub_int", q, [q, t.INT], True, lambda a, b: _plus(a, b, -1))),
        member("major", t.INT, lambda a: semver_of(a).core[0]),
        member("minor", t.INT, lambda a: semver_of(a).core[1]),
        member("patch", t.INT, lambda a: semver_of(a).core[2]),
        member("isGreaterThan", t.BOOL, lambda a, b: _compare(a, b) > 0, q),
        member("isLessThan", t.BOOL, lambda a, b: _compare(a, b) < 0, q),
        member("compareTo", t.INT, _compare, q),
    ]


def _compare(a: Mapping, b: Mapping) -> int:
    """compareTo of two quantities or two versions."""
    if QUANTITY_KEY in a and QUANTITY_KEY in b:
        return _cmp(_fraction(a), _fraction(b))
    if SEMVER_KEY in a and SEMVER_KEY in b:
        return _cmp(_Semver(a[SEMVER_KEY]), _Semver(b[SEMVER_KEY]))
    raise ValueError("no such overload")


def _cel_value(value: Any) -> Any:
    return _semver_value(value.text) if isinstance(value, Version) else value


def _split(name: str, driver: str) -> tuple[str, str]:
    domain, _, ident = name.rpartition("/")
    return domain or driver, ident


class Environment:
    """The compiled selectors of a run: each expression compiled once, evaluated per device."""

    def __init__(self):
        from cel_expr_python import cel  # imported by runs that evaluate selectors only
        from cel_expr_python.ext import ext_optional, ext_strings
        self._cel = cel
        self._env = cel.NewEnv(variables={"device": cel.Type.Map(cel.Type.STRING, cel.Type.DYN)},
                               extensions=[ext_strings.ExtStrings(), ext_optional.ExtOptional()],
                               functions=_library(cel))
        self._programs: dict[str, Any] = {}
        self._literals: dict[str, tuple[str, ...]] = {}

    def compile(self, expression: str) -> None:
        """Compiles an expression (once per run); CelError with the compiler's words if it is invalid
        or cannot evaluate to a bool."""
        if expression in self._programs:
            return
        try:
            program = self._env.compile(expression)
        except RuntimeError as err:
            raise CelError(_runtime_words(str(err))) from None
        result = program.return_type()
        if result != self._cel.Type.BOOL and result != self._cel.Type.DYN:
            raise CelError("must evaluate to bool")
        self._programs[expression] = program
        self._literals[expression] = tuple(a or b for a, b in _LITERAL.findall(expression))

    def matches(self, expression: str, driver: str, attributes: Mapping[str, Any],
                capacity: Mapping[str, Fraction]) -> bool:
        """Evaluates a compiled expression for one device; CelError for a runtime error."""
        self.compile(expression)
        attrs: dict[str, dict] = {}
        for name, value in attributes.items():
            domain, ident = _split(name, driver)
            attrs.setdefault(domain, {})[ident] = _cel_value(value)
        caps: dict[str, dict] = {}
        for name, value in capacity.items():
            domain, ident = _split(name, driver)
            caps.setdefault(domain, {})[ident] = _quantity_value(value)
        for literal in self._literals[expression]:  # domains the device has nothing in read as empty maps
            attrs.setdefault(literal, {})
            caps.setdefault(literal, {})
        result = self._programs[expression].eval(data={"device": {"driver": driver, "attributes": attrs,
                                                                  "capacity": caps}})
        value = result.value()
        if result.type() == self._cel.Type.ERROR:
            raise CelError(_runtime_words(str(value)))
        if not isinstance(value, bool):
            raise CelError(f"expression must evaluate to bool, got {value!r}")
        return value


def _runtime_words(text: str) -> str:
    """The runtime's message without its status-code wrapping ("INVALID_ARGUMENT: ... [INVALID_ARGUMENT]")."""
    text = re.sub(r"^[A-Z_]+: ", "", text.strip())
    text = re.sub(r"\s*\[[A-Z_]+\]$", "", text)
    return " ".join(line.strip() for line in text.splitlines() if line.strip())
