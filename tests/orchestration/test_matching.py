"""The pure matching rules of pull (orchestration/pull/matching.py), without the database: which
interfaces qualify, the preferred-provider order and grouping (also the fast tests of the
mutation check, docs/testing.md)."""
from orchestration.pull.matching import (
    declared_operations,
    group_by,
    preferred_first,
    qualifying_interface,
    qualifying_interfaces,
)
from orchestration.pull.types import ServiceRequirement


def interface(template: str = "generic_http", policy: str = "NONE", **properties) -> dict:
    return {"templateName": template, "protocol": "http", "policy": policy,
            "properties": properties}


class DeclaredOperationsTests:
    def test_it_reads_the_keys_of_an_http_operation_map(self):
        assert declared_operations({"operations": {"echo": {}, "query": {}}}) == {"echo", "query"}

    def test_it_reads_the_string_entries_of_an_mqtt_list(self):
        assert declared_operations({"operations": ["echo", 3, None, "query"]}) == {"echo", "query"}

    def test_it_answers_none_without_declared_operations(self):
        assert declared_operations({}) is None
        assert declared_operations({"operations": "echo"}) is None


class QualifyingInterfaceTests:
    def test_it_keeps_an_interface_of_a_requested_template(self):
        offered = interface("generic_mqtt", port=1)
        requirement = ServiceRequirement(interface_template_names=("generic_mqtt",))

        assert qualifying_interface(offered, requirement) == offered

    def test_it_drops_an_interface_of_another_template(self):
        requirement = ServiceRequirement(interface_template_names=("generic_mqtt",))

        assert qualifying_interface(interface("generic_http"), requirement) is None

    def test_it_keeps_an_interface_of_a_requested_policy(self):
        requirement = ServiceRequirement(security_policies=("CERT_AUTH",))

        assert qualifying_interface(interface(policy="CERT_AUTH"), requirement) is not None
        assert qualifying_interface(interface(policy="NONE"), requirement) is None

    def test_it_applies_property_requirements(self):
        requirement = ServiceRequirement(interface_property_requirements=({"port": 80},))

        assert qualifying_interface(interface(port=80), requirement) is not None
        assert qualifying_interface(interface(port=81), requirement) is None

    def test_it_needs_every_requested_operation_among_the_declared_ones(self):
        requirement = ServiceRequirement(operations=("echo", "query"))

        assert qualifying_interface(interface(operations=["echo", "query", "x"]),
                                    requirement) is not None
        assert qualifying_interface(interface(operations=["echo"]), requirement) is None

    def test_it_accepts_exactly_the_requested_operations(self):
        requirement = ServiceRequirement(operations=("echo",))

        assert qualifying_interface(interface(operations={"echo": {}}), requirement) is not None

    def test_it_keeps_an_interface_that_declares_no_operations(self):
        requirement = ServiceRequirement(operations=("echo",))

        assert qualifying_interface(interface(port=80), requirement) is not None

    def test_it_narrows_the_addresses_to_the_requested_types(self):
        offered = interface(accessAddresses=["192.168.0.1", "example.org", 7], port=80)
        requirement = ServiceRequirement(interface_address_types=("IPV4",))

        kept = qualifying_interface(offered, requirement)

        assert kept["properties"] == {"accessAddresses": ["192.168.0.1"], "port": 80}
        assert kept["templateName"] == "generic_http"
        assert offered["properties"]["accessAddresses"] == ["192.168.0.1", "example.org", 7]

    def test_it_drops_an_interface_without_an_address_of_the_requested_types(self):
        requirement = ServiceRequirement(interface_address_types=("IPV6",))

        assert qualifying_interface(interface(accessAddresses=["example.org"]),
                                    requirement) is None
        assert qualifying_interface(interface(accessAddresses="example.org"),
                                    requirement) is None
        assert qualifying_interface(interface(port=80), requirement) is None


class QualifyingInterfacesTests:
    def test_it_offers_every_interface_unchanged_without_interface_conditions(self):
        offered = [interface(accessAddresses=["example.org"]), interface("generic_mqtt")]

        assert qualifying_interfaces(iter(offered), ServiceRequirement()) == offered

    def test_it_keeps_only_the_qualifying_interfaces_in_order(self):
        offered = [interface("a", n=1), interface("b", n=2), interface("a", n=3)]
        requirement = ServiceRequirement(interface_template_names=("a",))

        assert qualifying_interfaces(offered, requirement) == [offered[0], offered[2]]


class PreferredFirstTests:
    candidates = [("p1", 1), ("p2", 2), ("p3", 3), ("p2", 4)]

    def order(self, preferred, only_preferred=False):
        return [n for _, n in preferred_first(self.candidates, lambda c: c[0], preferred,
                                              only_preferred=only_preferred)]

    def test_it_keeps_the_order_without_preferred_providers(self):
        assert self.order([]) == [1, 2, 3, 4]
        assert self.order([], only_preferred=True) == [1, 2, 3, 4]

    def test_it_puts_the_preferred_providers_first_keeping_the_order(self):
        assert self.order(["p3", "p2"]) == [2, 3, 4, 1]

    def test_it_keeps_only_the_preferred_providers_when_asked(self):
        assert self.order(["p2"], only_preferred=True) == [2, 4]


class GroupByTests:
    def test_it_groups_in_order_of_first_appearance(self):
        words = ["apple", "bean", "avocado", "corn", "banana"]

        assert group_by(words, lambda w: w[0]) == [
            ["apple", "avocado"], ["bean", "banana"], ["corn"]]
