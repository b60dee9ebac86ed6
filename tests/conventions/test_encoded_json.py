"""EncodedJSON (conventions/encoded_json.py): its text is what `json.dumps` gives for it."""
import json

from conventions.encoded_json import EncodedJSON, encoded, encoded_object

RESPONSE = {"results": [{"provider": "Prövider \"1\"", "metadata": {"n": 1.5, "ok": True,
                                                                  "none": None}}],
            "warnings": ["line\nbreak", "\u2028"]}


def test_its_text_is_json_dumps_of_it():
    value = encoded(RESPONSE)
    assert value == RESPONSE and isinstance(value, dict)
    assert value.text == json.dumps(RESPONSE)


def test_an_object_around_an_encoded_value_is_encoded_as_a_whole_would_be():
    envelope = encoded_object([("receiver", "Consümer"), ("sender", "So"),
                               ("payload", encoded(RESPONSE))])
    plain = {"receiver": "Consümer", "sender": "So", "payload": RESPONSE}
    assert envelope == plain
    assert envelope.text == json.dumps(plain)
    assert json.loads(envelope.text) == plain


def test_plain_values_in_an_object_are_encoded_there():
    value = encoded_object([("a", {"b": [1, 2]}), ("c", "d")])
    assert value.text == json.dumps({"a": {"b": [1, 2]}, "c": "d"})


def test_whatever_does_not_know_it_sees_a_dict():
    value = encoded({"a": 1})
    assert type(value) is EncodedJSON
    assert json.dumps(value) == value.text  # encoded again, the same
    assert dict(value) == {"a": 1}
