import pytest

from conventions.exceptions import InvalidParameter
from store.addresses import (
    ADDRESS_TYPES,
    detect_address_type,
    narrow_addresses,
    normalize_address,
    parse_interface_address,
)

FAIL = "Address verification failure: "


def rejection(normalized: str) -> str:
    with pytest.raises(InvalidParameter) as caught:
        parse_interface_address(normalized)
    return str(caught.value)


class AddressTypesTests:
    def test_it_lists_the_four_types(self):
        assert ADDRESS_TYPES == ("HOSTNAME", "IPV4", "IPV6", "MAC")


class NormalizeAddressTests:
    @pytest.mark.parametrize("value, expected", [
        ("Example.COM", "example.com"),
        ("  host.example.com\t\n", "host.example.com"),
        ("LOCALHOST", "localhost"),
        ("plainhost", "plainhost"),
        ("my-host", "my-host"),
        ("10.0.0.5", "10.0.0.5"),
        (" 192.168.1.1 ", "192.168.1.1"),
        ("999.1.1.1", "999.1.1.1"),
    ])
    def test_it_lower_cases_and_trims_hostnames_and_ipv4(self, value, expected):
        assert normalize_address(value) == expected

    @pytest.mark.parametrize("value", [
        "aabb.ccdd.eeff",
        "AABB.CCDD.EEFF",
        "aa-bb-cc-dd-ee-ff",
        "AA-BB-CC-DD-EE-FF",
        "aa:bb:cc:dd:ee:ff",
        " Aa:Bb:cC:dd:EE:ff ",
    ])
    def test_it_converts_every_mac_form_to_colon_pairs(self, value):
        assert normalize_address(value) == "aa:bb:cc:dd:ee:ff"

    @pytest.mark.parametrize("value, expected", [
        ("::1", "0000:0000:0000:0000:0000:0000:0000:0001"),
        ("::", "0000:0000:0000:0000:0000:0000:0000:0000"),
        ("2001:db8::1", "2001:0db8:0000:0000:0000:0000:0000:0001"),
        ("2001:DB8::", "2001:0db8:0000:0000:0000:0000:0000:0000"),
        ("fe80::1:2", "fe80:0000:0000:0000:0000:0000:0001:0002"),
        ("1:2:3:4:5:6:7:8", "0001:0002:0003:0004:0005:0006:0007:0008"),
        ("2001:0db8:0000:0000:0000:0000:0000:0001", "2001:0db8:0000:0000:0000:0000:0000:0001"),
    ])
    def test_it_expands_ipv6(self, value, expected):
        assert normalize_address(value) == expected

    @pytest.mark.parametrize("value, expected", [
        ("::ffff:192.168.1.1", "0000:0000:0000:0000:0000:ffff:c0a8:0101"),
        ("::FFFF:10.0.0.1", "0000:0000:0000:0000:0000:ffff:0a00:0001"),
        ("64:ff9b::127.0.0.1", "0064:ff9b:0000:0000:0000:0000:7f00:0001"),
    ])
    def test_it_converts_an_embedded_ipv4_to_hex_groups(self, value, expected):
        assert normalize_address(value) == expected

    @pytest.mark.parametrize("value, expected", [
        ("1:2:3", "1:2:3"),
        ("2001:db8::1::2", "2001:db8::1::2"),
        ("12345::1", "12345::1"),
        ("gggg::1", "gggg::1"),
        ("Host.Example:8080", "host.example:8080"),
        ("::ffff:999.1.1.1", "::ffff:999.1.1.1"),
        ("fe80::1%eth0", "fe80::1%eth0"),
        ("aa:bb:cc:dd:ee", "aa:bb:cc:dd:ee"),
    ])
    def test_it_leaves_unparsable_colon_values_as_they_are(self, value, expected):
        assert normalize_address(value) == expected

    @pytest.mark.parametrize("value", ["aa-bb-cc-dd-ee", "aabb.ccdd.eeff.0011", "aabb.ccdd.eefg"])
    def test_it_does_not_take_near_macs_for_macs(self, value):
        assert normalize_address(value) == value


class DetectAddressTypeTests:
    @pytest.mark.parametrize("normalized, expected", [
        ("aa:bb:cc:dd:ee:ff", "MAC"),
        ("00:11:22:33:44:55", "MAC"),
        ("10.0.0.5", "IPV4"),
        ("0.0.0.0", "IPV4"),
        ("255.255.255.255", "IPV4"),
        ("127.0.0.1", "IPV4"),
        ("0000:0000:0000:0000:0000:0000:0000:0001", "IPV6"),
        ("2001:0db8:0000:0000:0000:0000:0000:0001", "IPV6"),
        ("localhost", "HOSTNAME"),
        ("host.example.com", "HOSTNAME"),
        ("999.1.1.1", "HOSTNAME"),
        ("256.0.0.1", "HOSTNAME"),
        ("1.2.3", "HOSTNAME"),
        ("1.2.3.4.5", "HOSTNAME"),
        ("1.2.3.0004", "HOSTNAME"),
        ("1.2.3.-4", "HOSTNAME"),
        ("2001:db8::1", "HOSTNAME"),
        ("aa:bb:cc:dd:ee", "HOSTNAME"),
        ("", "HOSTNAME"),
    ])
    def test_it_detects_in_order_with_hostname_as_the_fallback(self, normalized, expected):
        assert detect_address_type(normalized) == expected

    def test_it_does_not_accept_a_trailing_newline(self):
        assert detect_address_type("aa:bb:cc:dd:ee:ff\n") == "HOSTNAME"
        assert detect_address_type("10.0.0.5\n") == "HOSTNAME"


class ValidateAddressTests:
    """The rules of each detected type (MACs are refused before them: ParseInterfaceAddressTests)."""

    @pytest.mark.parametrize("normalized, address_type", [
        ("127.0.0.1", "IPV4"),
        ("169.254.10.20", "IPV4"),
        ("10.0.0.5", "IPV4"),
        ("223.255.255.255", "IPV4"),
        ("240.0.0.1", "IPV4"),
        ("0000:0000:0000:0000:0000:0000:0000:0001", "IPV6"),
        ("fe80:0000:0000:0000:0000:0000:0000:0001", "IPV6"),
        ("2001:0db8:0000:0000:0000:0000:0000:0001", "IPV6"),
        ("localhost", "HOSTNAME"),
        ("host.example.com", "HOSTNAME"),
        ("a", "HOSTNAME"),
        ("a1-b2.example", "HOSTNAME"),
        ("1a.example.com", "HOSTNAME"),
        ("service.10.0.0.5", "HOSTNAME"),
        ("x" * 63 + ".example.com", "HOSTNAME"),
    ])
    def test_it_accepts_valid_addresses(self, normalized, address_type):
        assert detect_address_type(normalized) == address_type
        assert parse_interface_address(normalized) == normalized

    @pytest.mark.parametrize("normalized, reason", [
        ("0.0.0.0", "unspecified address is not allowed: 0.0.0.0"),
        ("255.255.255.255", "broadcast address is not allowed: 255.255.255.255"),
        ("224.0.0.1", "multicast address is not allowed: 224.0.0.1"),
        ("239.255.255.255", "multicast address is not allowed: 239.255.255.255"),
    ])
    def test_it_rejects_special_ipv4(self, normalized, reason):
        assert rejection(normalized) == FAIL + reason

    @pytest.mark.parametrize("normalized, reason", [
        ("0000:0000:0000:0000:0000:0000:0000:0000",
         "unspecified address is not allowed: 0000:0000:0000:0000:0000:0000:0000:0000"),
        ("ff02:0000:0000:0000:0000:0000:0000:0001",
         "multicast address is not allowed: ff02:0000:0000:0000:0000:0000:0000:0001"),
    ])
    def test_it_rejects_special_ipv6(self, normalized, reason):
        assert rejection(normalized) == FAIL + reason

    @pytest.mark.parametrize("normalized", [
        "-bad.example.com",
        "bad-.example.com",
        "x" * 64 + ".example.com",
        "a..b",
        ".example.com",
        "example.com.",
        "999.1.1.1",
        "1.example.com",
        "under_score.example",
        "sp ace.example",
        "h\u00e9llo.example",
        "host.example:8080",
        "2001:db8::1::2",
        "",
    ])
    def test_it_rejects_invalid_hostnames(self, normalized):
        assert rejection(normalized) == FAIL + f"invalid host name: {normalized}"

    def test_it_limits_hostnames_to_253_characters(self):
        at_limit = ".".join(["a" * 63] * 3 + ["b" * 61])
        assert len(at_limit) == 253
        assert parse_interface_address(at_limit) == at_limit
        assert rejection(at_limit + "b") == FAIL + "host name is too long"

    @pytest.mark.parametrize("address", ["a" * 1025, "1" * 1025, ":" * 1025])
    def test_it_rejects_addresses_over_1024_characters_whatever_the_type(self, address):
        assert rejection(address) == FAIL + "address is too long"


class ParseInterfaceAddressTests:
    @pytest.mark.parametrize("value, expected", [
        (" LocalHost ", "localhost"),
        ("127.0.0.1", "127.0.0.1"),
        ("Service.Example.com", "service.example.com"),
        ("::1", "0000:0000:0000:0000:0000:0000:0000:0001"),
        ("::ffff:192.168.1.1", "0000:0000:0000:0000:0000:ffff:c0a8:0101"),
    ])
    def test_it_returns_the_normalized_address(self, value, expected):
        assert parse_interface_address(value) == expected

    @pytest.mark.parametrize("value", ["aa:bb:cc:dd:ee:ff", "AABB.CCDD.EEFF", "aa-bb-cc-dd-ee-ff"])
    def test_it_rejects_macs(self, value):
        with pytest.raises(InvalidParameter) as caught:
            parse_interface_address(value)
        assert str(caught.value) == "Unacceptable address type in property value: MAC"

    @pytest.mark.parametrize("value, message", [
        ("0.0.0.0", FAIL + "unspecified address is not allowed: 0.0.0.0"),
        ("224.0.0.1", FAIL + "multicast address is not allowed: 224.0.0.1"),
        ("::", FAIL + "unspecified address is not allowed: "
         "0000:0000:0000:0000:0000:0000:0000:0000"),
        ("FF02::1", FAIL + "multicast address is not allowed: "
         "ff02:0000:0000:0000:0000:0000:0000:0001"),
        ("999.1.1.1", FAIL + "invalid host name: 999.1.1.1"),
        ("2001:db8::1::2", FAIL + "invalid host name: 2001:db8::1::2"),
        ("fe80::1%eth0", FAIL + "invalid host name: fe80::1%eth0"),
        ("-Bad.example.com", FAIL + "invalid host name: -bad.example.com"),
        ("a" * 1025, FAIL + "address is too long"),
    ])
    def test_it_rejects_invalid_addresses(self, value, message):
        with pytest.raises(InvalidParameter) as caught:
            parse_interface_address(value)
        assert str(caught.value) == message


class NarrowAddressesTests:
    ADDRESSES = [
        "host.example.com",
        "10.0.0.5",
        "::1",
        "AA-BB-CC-DD-EE-FF",
        "127.0.0.1",
        "localhost",
        "2001:db8::1",
        "999.1.1.1",
    ]

    @pytest.mark.parametrize("types, expected", [
        ({"IPV4"}, ["10.0.0.5", "127.0.0.1"]),
        ({"IPV6"}, ["::1", "2001:db8::1"]),
        ({"MAC"}, ["AA-BB-CC-DD-EE-FF"]),
        ({"HOSTNAME"}, ["host.example.com", "localhost", "999.1.1.1"]),
        ({"IPV4", "IPV6"}, ["10.0.0.5", "::1", "127.0.0.1", "2001:db8::1"]),
        ({"HOSTNAME", "MAC"},
         ["host.example.com", "AA-BB-CC-DD-EE-FF", "localhost", "999.1.1.1"]),
        (set(ADDRESS_TYPES), ADDRESSES),
        (set(), []),
    ])
    def test_it_keeps_the_addresses_of_the_requested_types_in_order(self, types, expected):
        assert narrow_addresses(self.ADDRESSES, types) == expected

    def test_it_returns_the_addresses_as_given_not_normalized(self):
        assert narrow_addresses([" ::1 ", "Host.Example"], {"IPV6"}) == [" ::1 "]

    def test_it_matches_type_names_case_insensitively(self):
        assert narrow_addresses(["10.0.0.5", "localhost"], {"ipv4"}) == ["10.0.0.5"]

    def test_it_handles_an_empty_list(self):
        assert narrow_addresses([], {"IPV4"}) == []
