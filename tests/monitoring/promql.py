"""The metric names a PromQL expression reads, for the checks of the dashboard and of the
alert rules. Enough PromQL for our expressions: names are the identifiers left once strings,
label matchers, ranges, grouping clauses and function names are taken out."""
import re

# Recorded by Prometheus itself for every target, not exported by the service.
PROMETHEUS_SERIES = frozenset({"up"})
_KEYWORDS = frozenset({"and", "or", "unless", "bool", "offset", "by", "without", "on",
                       "ignoring", "group_left", "group_right", "inf", "nan"})
_LABEL_VALUES = re.compile(r"^\s*label_values\(\s*([A-Za-z_:][\w:]*)\s*(\{[^}]*\})?\s*,"
                           r"\s*\w+\s*\)\s*$")


def metric_names(expr: str) -> set[str]:
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    text = re.sub(r"\{[^}]*\}", " ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)
    text = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ",
                  text)
    found = re.findall(r"(?<![\w:$.])([A-Za-z_:][\w:]*)(?![\w:])(?!\s*\()", text)
    return {name for name in found if name.lower() not in _KEYWORDS}


def variable_metric_names(query: str) -> set[str]:
    """A Grafana variable's `label_values(metric{...}, label)`."""
    match = _LABEL_VALUES.match(query)
    assert match, f"not a label_values query: {query}"
    return {match[1]}
