"""Kubernetes resource quantities, read exactly as ``resource.Quantity`` reads them.

Grammar (k8s.io/apimachinery/pkg/api/resource): an optional sign, digits with an
optional fraction (``5``, ``.5``, ``5.``, ``1.5``) and at most one suffix, which is
binary (``Ki Mi Gi Ti Pi Ei``), decimal (``n u m k M G T P E``) or a decimal exponent
(``e3``, ``E-3``, ``e+6``). Values are kept as :class:`fractions.Fraction`.

Like upstream ``ParseQuantity``, a fraction finer than 1n is rounded away from zero
to the next nano (``3.001n`` is ``4n``), and a binary-suffixed value is capped at
2^63-1 in magnitude (``9Ei``). ``value`` and ``milli_value`` round away from zero,
as ``Quantity.Value`` and ``MilliValue`` do since kubernetes/kubernetes#138510;
for the non-negative amounts in real requests that is the ceiling.

Deliberate differences from upstream, which is laxer than its own grammar:
a number must contain a digit (upstream reads ``.``, ``-``, ``Mi`` and ``e3`` as 0),
and an exponent above 1000 is refused rather than turned into a huge integer.
"""
from __future__ import annotations

import re
from fractions import Fraction
from functools import lru_cache

__all__ = ["InvalidQuantity", "format_quantity", "milli_value", "parse_quantity", "value"]

_NANO = 10**9
_MAX_INT64 = 2**63 - 1
_MAX_INT32 = 2**31 - 1  # upstream refuses exponents outside the int32 scale
_MAX_EXPONENT = 1000  # our own guard: 10**(2**31) would not fit in memory

_BINARY_SHIFTS = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_EXPONENTS = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIXES_DESC = sorted(_BINARY_SHIFTS.items(), key=lambda item: -item[1])

# [0-9] rather than \d: Python's \d also matches non-ASCII digits.
_QUANTITY_RE = re.compile(
    r"""
    (?P<sign>[+-]?)
    (?P<whole>[0-9]*)
    (?:\.(?P<frac>[0-9]*))?
    (?:
        (?P<binary>[KMGTPE]i)
      | [eE](?P<exponent>[+-]?[0-9]+)
      | (?P<decimal>[numkMGTPE]?)
    )
    """,
    re.VERBOSE,
)


class InvalidQuantity(ValueError):
    """Raised for a value that is not a Kubernetes quantity."""


def _invalid(text: object, why: str = "") -> InvalidQuantity:
    detail = why or "want e.g. 250m, 1.5Gi, 1e3"
    return InvalidQuantity(f"{text!r} is not a quantity ({detail})")


def _round_away(x: Fraction) -> int:
    """Rounds to an integer away from zero (ceil for x >= 0)."""
    magnitude = -(-abs(x.numerator) // x.denominator)
    return magnitude if x.numerator >= 0 else -magnitude


def _round_to_nano(x: Fraction) -> Fraction:
    """Rounds x away from zero to a whole number of nano-units, as ParseQuantity does."""
    if (x * _NANO).denominator == 1:
        return x
    return Fraction(_round_away(x * _NANO), _NANO)


def _cap_binary(x: Fraction) -> Fraction:
    """Caps a binary-suffixed value at 2^63-1 in magnitude, as ParseQuantity does."""
    if abs(x) <= _MAX_INT64:
        return x
    return Fraction(_MAX_INT64 if x > 0 else -_MAX_INT64)


def _to_int(digits: str, text: str) -> int:
    try:
        return int(digits)
    except ValueError:  # more digits than int() allows
        raise _invalid(text, "too many digits") from None


def _decimal_amount(mantissa: int, exponent: int, digit_count: int) -> Fraction:
    """mantissa * 10**exponent, rounded to nano-units."""
    if mantissa == 0:
        return Fraction(0)
    if exponent >= 0:
        return Fraction(mantissa * 10**exponent)
    if mantissa and exponent + digit_count <= -9:  # below 1n: rounds to +-1n
        return Fraction(1 if mantissa > 0 else -1, _NANO)
    return _round_to_nano(Fraction(mantissa, 10**-exponent))


def _suffix_exponent(match: re.Match, text: str) -> int:
    """The power of ten named by a decimal suffix or exponent."""
    if match["exponent"] is None:
        return _DECIMAL_EXPONENTS[match["decimal"]]
    exponent = _to_int(match["exponent"], text)
    if abs(exponent) > _MAX_INT32:
        raise _invalid(text, "exponent out of range")
    return exponent


def _parse_general(text: str) -> Fraction:
    match = _QUANTITY_RE.fullmatch(text)
    if match is None or not (match["whole"] or match["frac"]):
        raise _invalid(text)
    frac = match["frac"] or ""
    digits = match["whole"] + frac
    mantissa = _to_int(digits, text)
    if match["sign"] == "-":
        mantissa = -mantissa
    if match["binary"]:
        amount = Fraction(mantissa << _BINARY_SHIFTS[match["binary"]], 10 ** len(frac))
        return _cap_binary(_round_to_nano(amount))
    exponent = _suffix_exponent(match, text)
    if mantissa and exponent > _MAX_EXPONENT:
        raise _invalid(text, "too large")
    return _decimal_amount(mantissa, exponent - len(frac), len(digits.lstrip("0")))


@lru_cache(maxsize=4096)
def _parse_text(text: str) -> Fraction:
    """Parses a quantity string; cached, since pods repeat the same few strings."""
    if text.isascii() and text.isdigit():  # fast path: "2", "512"
        return Fraction(_to_int(text, text))
    return _parse_general(text)


def parse_quantity(s: str | int | float) -> Fraction:
    """Returns the exact value of a quantity given as text, int or float (as YAML gives it).

    A float is read through its repr (0.5 is "0.5"); bools and other types are refused.
    Raises InvalidQuantity naming the value when it is not a quantity.
    """
    if isinstance(s, str):
        return _parse_text(s)
    if isinstance(s, bool):
        raise _invalid(s, "a boolean")
    if isinstance(s, int):
        return Fraction(s)
    if isinstance(s, float):
        return _parse_text(repr(s))
    raise _invalid(s, f"a {type(s).__name__}")


_WHOLE_RE = re.compile(r"([0-9]+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?")


def _whole_milli(text: str) -> int | None:
    """The milli-value of a whole number with at most a suffix ("6607m", "24205Mi", "4"), the usual
    shape of metrics and requests, in integers; None for any other shape (the exact path then)."""
    match = _WHOLE_RE.fullmatch(text)
    if match is None:
        return None
    number, suffix = int(match[1]), match[2] or ""
    if suffix in _BINARY_SHIFTS:
        return min(number << _BINARY_SHIFTS[suffix], _MAX_INT64) * 1000  # _cap_binary
    if suffix == "m":
        return number
    return number * 10 ** _DECIMAL_EXPONENTS[suffix] * 1000


@lru_cache(maxsize=4096)
def _milli_text(text: str) -> int:
    whole = _whole_milli(text)
    return whole if whole is not None else _round_away(_parse_text(text) * 1000)


@lru_cache(maxsize=4096)
def _value_text(text: str) -> int:
    whole = _whole_milli(text)
    return -(-whole // 1000) if whole is not None else _round_away(_parse_text(text))


def milli_value(s: str | int | float) -> int:
    """Returns the value in milli-units rounded away from zero, as Quantity.MilliValue."""
    if isinstance(s, str):
        return _milli_text(s)
    if isinstance(s, int) and not isinstance(s, bool):
        return s * 1000
    return _round_away(parse_quantity(s) * 1000)


def value(s: str | int | float) -> int:
    """Returns the value rounded to an integer away from zero, as Quantity.Value."""
    if isinstance(s, str):
        return _value_text(s)
    if isinstance(s, int) and not isinstance(s, bool):
        return s
    return _round_away(parse_quantity(s))


def _format_milli(amount: int) -> str:
    whole, rest = divmod(amount, 1000)
    return str(whole) if rest == 0 else f"{amount}m"


def _format_bytes(amount: int) -> str:
    # Like upstream's BinarySI form: the largest binary suffix that divides exactly.
    # Past 2^63-1 a binary suffix would not parse back (it is capped), so use digits.
    if 0 < amount <= _MAX_INT64:
        for suffix, shift in _BINARY_SUFFIXES_DESC:
            if amount & ((1 << shift) - 1) == 0:
                return f"{amount >> shift}{suffix}"
    return str(amount)


def format_quantity(amount: int, kind: str) -> str:
    """Formats an integer amount as a quantity string that parses back to it.

    kind "milli": amount is in milli-units (cpu): 2000 -> "2", 2500 -> "2500m".
    kind "bytes": amount is in units; the largest exact binary suffix is used:
    1536 * 2**20 -> "1536Mi", 2 * 2**30 -> "2Gi", 1000 -> "1000".
    kind "value": amount is a plain count (pods, extended resources): 110 -> "110".
    """
    if isinstance(amount, bool) or not isinstance(amount, int):
        raise TypeError(f"amount must be an int, not {type(amount).__name__}")
    if amount < 0:
        return "-" + format_quantity(-amount, kind)
    if kind == "milli":
        return _format_milli(amount)
    if kind == "bytes":
        return _format_bytes(amount)
    if kind == "value":
        return str(amount)
    raise ValueError(f"unknown quantity kind {kind!r} (want 'milli', 'bytes' or 'value')")
