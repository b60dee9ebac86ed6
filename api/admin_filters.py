"""A text-box list filter: the default choice list of distinct values would read the whole
table at a million rules; an exact, normalized name uses the indexes."""
from collections.abc import Callable

from django.contrib import admin
from django.db.models import QuerySet


class NameInputFilter(admin.SimpleListFilter):
    template = "admin/store/input_filter.html"
    field: str
    normalize: Callable[[str], str | None]

    def lookups(self, request, model_admin):
        return (("", ""),)  # one dummy choice, or Django hides the filter

    def queryset(self, request, queryset: QuerySet) -> QuerySet:
        value = self.value()
        if not value:
            return queryset
        return queryset.filter(**{self.field: type(self).normalize(value) or value})

    def choices(self, changelist):
        # The other filters, the search and the ordering survive a new value typed here.
        yield {
            "query_parts": [(key, value) for key, values in changelist.filter_params.items()
                            if key not in (self.parameter_name, "p")
                            for value in values],
        }


def name_filter(field: str, normalize: Callable[[str], str | None]) -> type[NameInputFilter]:
    """The NameInputFilter of one column, titled by it, for names `normalize` normalizes."""
    return type(f"{field}_filter", (NameInputFilter,), {
        "title": field.replace("_", " "), "parameter_name": field, "field": field,
        "normalize": staticmethod(normalize)})
