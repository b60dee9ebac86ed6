import datetime as dt
import uuid

import pytest

from conventions.exceptions import InvalidParameter
from conventions.pagination import PageRequest, parse_pagination
from conventions.timestamps import format_utc, parse_utc, parse_utc_field
from conventions.uuids import parse_uuid

U1 = "11111111-1111-1111-1111-111111111111"


class UuidTests:
    @pytest.mark.parametrize("raw", [U1, f"  {U1}\n", U1.upper().replace("-", "-")])
    def test_it_accepts_canonical_uuids_trimmed_and_in_any_case(self, raw):
        assert parse_uuid(raw) == uuid.UUID(U1)

    def test_it_outputs_lower_case(self):
        assert str(parse_uuid("ABCDEF01-2345-6789-ABCD-EF0123456789")) == (
            "abcdef01-2345-6789-abcd-ef0123456789"
        )

    @pytest.mark.parametrize("raw", [
        "1-1-1-1-1", "6-7", "11111111111111111111111111111111", "{" + U1 + "}",
        f"urn:uuid:{U1}", U1 + "0", "g" * 8 + U1[8:], "", None, 12, ["x"],
    ])
    def test_it_rejects_anything_else(self, raw):
        assert parse_uuid(raw) is None


class TimestampTests:
    def test_it_parses_utc_instants(self):
        assert parse_utc("2025-11-08T12:00:00Z") == dt.datetime(2025, 11, 8, 12,
                                                                tzinfo=dt.timezone.utc)

    def test_it_parses_fractional_seconds(self):
        parsed = parse_utc("2025-11-08T12:00:00.123456789Z")
        assert parsed.microsecond == 123456
        assert parse_utc("2025-11-08T12:00:00.5Z").microsecond == 500000

    @pytest.mark.parametrize("raw", [
        "2025-11-08", "2025-11-08T12:00:00", "2025-11-08T12:00:00+00:00",
        "2025-11-08 12:00:00Z", "2025-13-08T12:00:00Z", "2025-02-30T12:00:00Z",
        "2025-11-08T25:00:00Z", "yesterday", "", None, 1731067200,
    ])
    def test_it_rejects_other_forms(self, raw):
        assert parse_utc(raw) is None

    def test_it_names_the_field_in_its_error(self):
        with pytest.raises(InvalidParameter) as error:
            parse_utc_field("2025-02-01", "alivesAt")
        assert error.value.message == (
            "Invalid date time in field: alivesAt. Please use a UTC date time in ISO-8601 format"
        )

    def test_it_formats_with_z_and_fraction_only_when_non_zero(self):
        whole = dt.datetime(2025, 11, 8, 12, tzinfo=dt.timezone.utc)
        assert format_utc(whole) == "2025-11-08T12:00:00Z"
        assert format_utc(whole.replace(microsecond=120000)) == "2025-11-08T12:00:00.120000Z"
        cet = dt.timezone(dt.timedelta(hours=1))
        assert format_utc(dt.datetime(2025, 11, 8, 13, tzinfo=cet)) == "2025-11-08T12:00:00Z"


def page(data, **kwargs):
    options = {"sort_fields": ["id", "createdAt", "priority"], "default_sort_field": "createdAt"}
    options.update(kwargs)
    return parse_pagination(data, **options)


def page_error(data) -> str:
    with pytest.raises(InvalidParameter) as error:
        page(data)
    return error.value.message


class PaginationTests:
    def test_it_defaults_to_the_first_page_of_max_size(self, settings):
        settings.MAX_PAGE_SIZE = 1000
        assert page(None) == PageRequest(0, 1000, "ASC", "createdAt")
        assert page({}) == PageRequest(0, 1000, "ASC", "createdAt")

    def test_it_uses_the_endpoint_default_direction(self):
        assert page(None, default_direction="DESC").direction == "DESC"

    def test_it_reads_every_field(self):
        assert page({"page": 2, "size": 10, "direction": " desc ", "sortField": "priority"}) == (
            PageRequest(2, 10, "DESC", "priority")
        )
        assert page({"page": 2, "size": 10}).offset == 20

    def test_it_treats_blank_direction_and_sort_field_as_defaults(self):
        assert page({"direction": "  ", "sortField": ""}) == page(None)

    def test_it_requires_page_and_size_together(self):
        assert page_error({"size": 10}) == (
            "If size parameter is defined then page parameter cannot be undefined"
        )
        assert page_error({"page": 0}) == (
            "If page parameter is defined then size parameter cannot be undefined"
        )

    def test_it_bounds_the_size(self, settings):
        settings.MAX_PAGE_SIZE = 50
        assert page({"page": 0, "size": 50}).size == 50
        assert page_error({"page": 0, "size": 51}) == "The page size cannot be larger than 50"

    def test_it_normalizes_a_size_below_1_to_the_maximum_as_the_java_page_service(self, settings):
        settings.MAX_PAGE_SIZE = 50
        assert page({"page": 1, "size": 0}).size == 50
        assert page({"page": 1, "size": -7}).size == 50
        assert page({"page": 1, "size": 0}).offset == 50

    def test_it_normalizes_a_negative_page_to_the_first_as_the_java_page_service(self):
        assert page({"page": -1, "size": 5}).page == 0
        assert page({"page": -10**19, "size": 5}).offset == 0

    def test_it_rejects_an_unknown_direction(self):
        assert page_error({"direction": "UP"}) == (
            "Direction is invalid. Only ASC or DESC are allowed"
        )

    def test_it_lists_the_allowed_sort_fields(self):
        assert page_error({"sortField": "createdat"}) == (
            "Sort field is invalid. Only the following are allowed: [id, createdAt, priority]"
        )

    @pytest.mark.parametrize("data, message", [
        ({"page": "1", "size": 5}, "pagination.page: A valid integer is required."),
        ({"page": 1, "size": True}, "pagination.size: A valid integer is required."),
        ({"page": 1.5, "size": 5}, "pagination.page: A valid integer is required."),
        ({"direction": 1}, "pagination.direction: Not a valid string."),
        ({"sortField": ["id"]}, "pagination.sortField: Not a valid string."),
        ([], "pagination: Expected an object."),
    ])
    def test_it_rejects_wrong_json_types_naming_the_field(self, data, message):
        assert page_error(data) == message


@pytest.mark.django_db
class PaginateTests:
    @pytest.fixture
    def systems(self, django_user_model):
        # Two systems share a date_joined value, so the tie-breaker decides their order.
        joined = dt.datetime(2025, 1, 1, tzinfo=dt.timezone.utc)
        created = [django_user_model.objects.create(username=name, date_joined=joined)
                   for name in ("Charlie", "Alpha", "Bravo")]
        django_user_model.objects.filter(username="Alpha").update(
            date_joined=joined - dt.timedelta(days=1))
        return created

    def paginate(self, data):
        from conventions.pagination import paginate
        from identity.models import User

        request = parse_pagination(data, sort_fields=["name", "joined"],
                                   default_sort_field="joined")
        rows, total = paginate(User.objects.all(), request,
                               columns={"name": "username", "joined": "date_joined"})
        return [user.username for user in rows], total

    def test_it_orders_by_the_mapped_column_and_counts_all_matches(self, systems):
        assert self.paginate({"sortField": "name"}) == (["Alpha", "Bravo", "Charlie"], 3)
        assert self.paginate({"sortField": "name", "direction": "DESC"}) == (
            ["Charlie", "Bravo", "Alpha"], 3)

    def test_it_slices_pages(self, systems):
        assert self.paginate({"sortField": "name", "page": 1, "size": 2}) == (["Charlie"], 3)
        assert self.paginate({"sortField": "name", "page": 5, "size": 2}) == ([], 3)

    def test_it_breaks_ties_by_primary_key(self, systems):
        charlie, _, bravo = systems
        names, _ = self.paginate(None)
        assert names == ["Alpha"] + [u.username for u in sorted([charlie, bravo],
                                                                 key=lambda u: u.pk)]
