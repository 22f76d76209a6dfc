"""How the report writes numbers: significant digits, units, ranges, ratios and tables."""

import math


def number(x, digits=3):
    """x to about `digits` significant digits; whole numbers from 100 up, with thousands commas."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if abs(x) >= 100 or x == 0:
        return f"{round(x):,}"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(x))))
    text = f"{x:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def fixed(x, decimals):
    return "–" if x is None else f"{x:,.{decimals}f}"


def ms(x, digits=3):
    return f"{number(x, digits)} ms"


def us(x, digits=3):
    return f"{number(x, digits)} µs"


def kib(x, digits=3):
    return f"{number(x, digits)} KiB"


def mib(x, digits=3):
    return f"{number(x, digits)} MiB"


def rate(x):
    """Per second: '8.4/s'; '–' for none."""
    return "–" if x is None else f"{number(x)}/s"


def times(x, digits=3):
    """A ratio: 272×, 22×, 5.83×, 1.05×."""
    return f"{number(x, digits if x < 10 else 2)}×"


def pct(fraction, decimals=0):
    """A share given as a fraction: 0.883 → '88 %'."""
    return f"{fraction * 100:.{decimals}f} %"


def span(values, unit=number):
    """The range of some values in one unit: '2.3–2.8 ms', or one value when they agree."""
    values = [v for v in values if v is not None]
    low, high = unit(min(values)), unit(max(values))
    if low == high:
        return low
    low_number, _, low_unit = low.partition(" ")
    high_number, _, high_unit = high.partition(" ")
    if low_unit == high_unit and low_unit:
        return f"{low_number}–{high_number} {low_unit}"
    for suffix in ("×", "/s"):
        if low.endswith(suffix) and high.endswith(suffix):
            return f"{low[:-len(suffix)]}–{high}"
    return f"{low}–{high}"


def listing(items):
    """'a, b and c'."""
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def table(header, rows, right=()):
    """A Markdown table; columns whose index is in `right` are right-aligned."""
    align = ["---:" if i in right else "---" for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def load(pair):
    """A load-average triple as the records keep it, to two decimals."""
    if isinstance(pair, str):
        pair = [float(v) for v in pair.replace(",", " ").split()[:3]]
    return " / ".join(f"{v:.2f}" for v in pair)


# Student's t, two-sided 95 %, by degrees of freedom (runs − 1).
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}


def across(values):
    """Mean and the half-width of its 95 % interval across repeated runs (needs two or more)."""
    n = len(values)
    mean = sum(values) / n
    sd = (sum((v - mean) ** 2 for v in values) / (n - 1)) ** 0.5
    return mean, T95[n - 1] * sd / n ** 0.5


def mean(values):
    """The mean of repeated runs' figures."""
    return across(values)[0]


def mean_and_interval(values, unit):
    """'2.3 ms [2.1–2.5 ms]': the mean of repeated runs' figures and its 95 % interval."""
    mean, half = across(values)
    # Every figure reported so is positive; an interval reaching below zero says only "at least 0".
    return f"{unit(mean)} [{span([max(0.0, mean - half), mean + half], unit)}]"
