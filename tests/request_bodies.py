"""Generated request bodies for the property tests of the body checks compiled from the
serializers (api.shapes): values biased towards the
request shapes and towards the limits, which SMALL_LIMITS makes small enough to be crossed."""
from collections.abc import Mapping
from typing import Any

from hypothesis import strategies as st

from orchestration.pull.serializers import MAX_SECONDS

# Small enough that generated values often cross them.
SMALL_LIMITS = {"MAX_LIST_LENGTH": 3, "MAX_STRING_LENGTH": 6, "MAX_JSON_DEPTH": 3,
                "MAX_PULL_OPERATIONS": 2}


def plain(value: Any) -> Any:
    """validated_data as plain dicts and lists, key order kept."""
    if isinstance(value, Mapping):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


def sized(sizes: list[int], make) -> st.SearchStrategy:
    """A value of one of `sizes`: chosen evenly (Hypothesis favours small sizes), so that the
    small limits below are often met and sometimes crossed."""
    return st.sampled_from(sizes).flatmap(lambda n: make(min_size=n, max_size=n))


# Up to the limit or one past it, for SMALL_LIMITS.
_TEXT_SIZES = [0, 1, 2, 5, 6, 6, 7]
LIST_SIZES = [0, 1, 1, 2, 3, 3, 4]

# Letters and blanks; now and then a character the serializer's text fields refuse (NUL, a
# surrogate), which only the input gate keeps out of real bodies.
_CHARS = st.sampled_from(["a", "a", "a", "Z", " ", "\t", "é"])
_CLEAN_TEXT = sized(_TEXT_SIZES, lambda **size: st.text(_CHARS, **size))
_REFUSED_TEXT = sized(_TEXT_SIZES, lambda **size: st.text(
    st.one_of(_CHARS, st.sampled_from(["\x00", "\ud800"])), **size))
TEXT = st.one_of(_CLEAN_TEXT, _CLEAN_TEXT, _CLEAN_TEXT, _CLEAN_TEXT, _REFUSED_TEXT)
KEY = st.one_of(TEXT, st.sampled_from(["a", "op", "value", "MATCHMAKING"]))
INT = st.one_of(st.integers(-3, 3), st.integers(),
                 st.sampled_from([MAX_SECONDS, MAX_SECONDS + 1, 2**63, -2**63, 10**30]))
SCALAR = st.one_of(st.none(), st.booleans(), INT, TEXT,
                    st.floats(allow_nan=False, allow_infinity=False), st.just(5.0))


def _nest(depth: int, leaf: Any, in_lists: bool) -> Any:
    for _ in range(depth):
        leaf = [leaf] if in_lists else {"k": leaf}
    return leaf


JSON = st.one_of(
    st.recursive(SCALAR, lambda inner: st.one_of(
        sized(LIST_SIZES, lambda **size: st.lists(inner, **size)),
        sized(LIST_SIZES, lambda **size: st.dictionaries(KEY, inner, **size))),
        max_leaves=10),
    st.builds(_nest, st.sampled_from([1, 2, 3, 4]), SCALAR, st.booleans()))


def list_of(element: st.SearchStrategy) -> st.SearchStrategy:
    return sized(LIST_SIZES, lambda **size: st.lists(element, **size))


@st.composite
def some_of(draw, fields: dict[str, st.SearchStrategy]) -> dict:
    """An object of some of `fields` (often few, so that most are valid), in any order."""
    names = draw(st.lists(st.sampled_from(list(fields)), unique=True))
    return {name: draw(fields[name]) for name in names}


# A JSON object (flags, requirements, notify properties); its values are mostly scalars.
JSON_OBJECT = sized(LIST_SIZES, lambda **size: st.dictionaries(
    KEY, st.one_of(SCALAR, SCALAR, SCALAR, JSON), **size))


def orchestration_body(either) -> st.SearchStrategy:
    """Orchestration request bodies whose every field is `either(the right type)`."""
    texts = list_of(st.one_of(TEXT, TEXT, TEXT, st.none(), either(TEXT)))
    json_object = JSON_OBJECT
    requirements = list_of(st.one_of(json_object, json_object, st.none(), JSON))
    service = some_of({
        "serviceDefinition": either(TEXT),
        "operations": either(texts),
        "versions": either(texts),
        "alivesAt": either(TEXT),
        "metadataRequirements": either(requirements),
        "interfaceTemplateNames": either(texts),
        "interfaceAddressTypes": either(texts),
        "interfacePropertyRequirements": either(requirements),
        "securityPolicies": either(texts),
        "preferredProviders": either(texts),
        "unknownField": JSON,
    })
    return some_of({
        "serviceRequirement": either(service),
        "orchestrationFlags": either(json_object),
        "qosRequirements": either(json_object),
        "exclusivityDuration": either(INT),
        "extra": JSON,
        "ServiceRequirement": JSON,
    })

