"""The flexible rules' admin (issue 33): created and removed through the flexible rule
services, with the API's validation and messages; a stored rule is not edited (remove it and
create another)."""
from django import forms
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from api.admin_display import short_time, truncated
from api.admin_filters import name_filter
from api.admin_forms import CheckedJSONField
from conventions import names
from conventions.exceptions import InvalidParameter
from store.models import FlexibleRule
from store.services.flexible_rules import (
    FlexibleRuleDraft,
    flexible_rule_delete_many,
    flexible_rule_validate,
    flexible_rules_ensure_not_stored,
    flexible_rules_store,
)

_REQUIREMENTS = ("A list of requirement objects, any of which may hold, e.g. "
                 '[{"site": "plant1"}] or [{"line": {"op": "GREATER_THAN", "value": 2}}].')


class FlexibleRuleAdminForm(forms.ModelForm):
    class Meta:
        model = FlexibleRule
        fields = ["consumer", "consumer_metadata", "provider", "provider_metadata",
                  "service_definition", "interface_template", "service_metadata",
                  "min_version", "max_version", "priority"]
        field_classes = {"consumer_metadata": CheckedJSONField,
                         "provider_metadata": CheckedJSONField,
                         "service_metadata": CheckedJSONField}
        help_texts = {
            "consumer": "The consumer's system name; this and/or its metadata requirements.",
            "consumer_metadata": "Consumers whose system metadata in the ServiceRegistry "
                                 "satisfies these. " + _REQUIREMENTS,
            "provider": "The provider's system name; this and/or its metadata requirements.",
            "provider_metadata": "Providers whose system metadata satisfies these; [{}] is "
                                 "any provider. " + _REQUIREMENTS,
            "interface_template": "Only interfaces of this template, e.g. generic_http.",
            "service_metadata": "Instances whose metadata satisfies these. " + _REQUIREMENTS,
            "priority": "Lower is better; empty: 2147483647.",
        }

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["priority"].required = False

    def clean(self) -> dict:
        data = super().clean()
        if self.errors:
            return data
        try:
            valid = flexible_rule_validate(FlexibleRuleDraft(
                consumer=data.get("consumer") or None,
                consumer_metadata=data.get("consumer_metadata"),
                provider=data.get("provider") or None,
                provider_metadata=data.get("provider_metadata"),
                service_definition=data.get("service_definition"),
                interface_template=data.get("interface_template") or None,
                service_metadata=data.get("service_metadata"),
                min_version=data.get("min_version") or None,
                max_version=data.get("max_version") or None,
                priority=data.get("priority")))
            flexible_rules_ensure_not_stored([valid])
        except InvalidParameter as exc:
            raise forms.ValidationError(exc.message) from exc
        data["valid_rule"] = valid
        return data


@admin.register(FlexibleRule)
class FlexibleRuleAdmin(admin.ModelAdmin):
    form = FlexibleRuleAdminForm
    list_display = ("consumer_shown", "provider_shown", "service_definition", "priority",
                    "created")
    list_filter = (name_filter("service_definition", names.normalize_service_definition),
                   name_filter("consumer", names.normalize_system_name))
    search_fields = ("consumer", "provider", "service_definition")
    ordering = ("priority", "service_definition", "created_at")
    list_per_page = 100

    @admin.display(description="consumer", ordering="consumer")
    def consumer_shown(self, rule: FlexibleRule) -> str:
        return truncated(rule.consumer, 22) if rule.consumer else "by metadata"

    @admin.display(description="provider", ordering="provider")
    def provider_shown(self, rule: FlexibleRule) -> str:
        return truncated(rule.provider, 22) if rule.provider else "by metadata"

    @admin.display(description="created", ordering="created_at")
    def created(self, rule: FlexibleRule) -> str:
        return short_time(rule.created_at, "%Y-%m-%d")

    def has_change_permission(self, request: HttpRequest, obj: FlexibleRule | None = None):
        return obj is None and super().has_change_permission(request, obj)

    def get_readonly_fields(self, request: HttpRequest, obj: FlexibleRule | None = None):
        return () if obj is None else [*FlexibleRuleAdminForm.Meta.fields, "created_by",
                                       "created_at"]

    def save_model(self, request: HttpRequest, obj: FlexibleRule,
                   form: FlexibleRuleAdminForm, change: bool) -> None:
        saved = flexible_rules_store([form.cleaned_data["valid_rule"]],
                                     requester=request.user.get_username())[0]
        obj.__dict__.update({f.attname: getattr(saved, f.attname)
                             for f in FlexibleRule._meta.fields})
        obj._state.adding = False

    def delete_model(self, request: HttpRequest, obj: FlexibleRule) -> None:
        flexible_rule_delete_many(ids=[obj.pk])

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[FlexibleRule]) -> None:
        flexible_rule_delete_many(ids=list(queryset.values_list("pk", flat=True)))
