"""A text-box list filter: the default choice list of distinct values would read the whole
table at a million rules; an exact, normalized name uses the indexes."""
from collections.abc import Callable

from django.contrib import admin
from django.db.models import Q, QuerySet


class NameInputFilter(admin.SimpleListFilter):
    template = "admin/store/input_filter.html"
    fields: tuple[str, ...]  # the name is looked for in any of them
    normalize: Callable[[str], str | None]

    def lookups(self, request, model_admin):
        return (("", ""),)  # one dummy choice, or Django hides the filter

    def queryset(self, request, queryset: QuerySet) -> QuerySet:
        value = self.value()
        if not value:
            return queryset
        name, matches = type(self).normalize(value) or value, Q()
        for field in self.fields:
            matches |= Q(**{field: name})
        return queryset.filter(matches)

    def choices(self, changelist):
        # The other filters, the search and the ordering survive a new value typed here.
        yield {
            "query_parts": [(key, value) for key, values in changelist.filter_params.items()
                            if key not in (self.parameter_name, "p")
                            for value in values],
        }


def name_filter(parameter: str, normalize: Callable[[str], str | None],
                *fields: str) -> type[NameInputFilter]:
    """The NameInputFilter titled `parameter`, for names `normalize` normalizes, looked for in
    `fields` (by default the column `parameter`)."""
    return type(f"{parameter}_filter", (NameInputFilter,), {
        "title": parameter.replace("_", " "), "parameter_name": parameter,
        "fields": fields or (parameter,), "normalize": staticmethod(normalize)})
