"""The rules' admin (the rule services write, with the API's validation and messages): the
list in the order pull tries them, flagging rules whose instance is not in the catalog."""
from django import forms
from django.contrib import admin, messages
from django.db.models import Exists, OuterRef, QuerySet
from django.http import HttpRequest
from django.utils.html import format_html

from api.admin_display import short_time, truncated
from api.admin_filters import name_filter
from api.admin_forms import DatalistInput
from conventions import names
from conventions.exceptions import InvalidParameter
from store.admin_import import ImportExportMixin
from store.files import RULES
from store.models import MAX_PRIORITY, Rule, ServiceInstance
from store.services.rules import (
    RuleDraft,
    rule_delete_many,
    rule_priorities_modify,
    rule_validate,
    rules_ensure_not_stored,
    rules_store,
)


# The picker offers this many instance ids (the page stays light); any id can be typed.
INSTANCE_SUGGESTIONS = 1000
NOT_IN_CATALOG = ("Not in the service instance catalog: the rule is kept, and pull uses it "
                  "once the instance is registered.")


class RuleAdminForm(forms.ModelForm):
    """The API's validation and its messages: names normalized and checked, priority
    positive, no second rule with the same consumer, service definition and priority."""

    # Checked here with the API's words, so the database constraint's name never shows.
    priority = forms.IntegerField(
        min_value=1, max_value=MAX_PRIORITY,
        widget=forms.NumberInput(attrs={"class": "vIntegerField"}),
        error_messages={"required": "Priority is missing",
                        "min_value": "Priority should be positive",
                        "max_value": f"Priority should not be greater than {MAX_PRIORITY}",
                        "invalid": "Priority must be a positive whole number"},
        help_text="1 is tried first. Each rule of a consumer for one service definition has "
                  "its own priority.")

    class Meta:
        model = Rule
        fields = ["consumer", "service_instance_id", "priority"]
        help_texts = {
            "consumer": "The consuming system's name, e.g. TemperatureConsumer; normalized "
                        "as in the API (temperature-consumer becomes TemperatureConsumer).",
            "service_instance_id": "The provider's service instance as "
                                   "Provider|serviceDefinition|version, e.g. "
                                   "TemperatureProvider|temperatureInfo|1.0.0. Pick one of "
                                   "the catalog's (type to filter) or type one that is "
                                   "registered later.",
        }
        widgets = {"service_instance_id": DatalistInput(
            lambda: ServiceInstance.objects.order_by("service_instance_id").values_list(
                "service_instance_id", flat=True)[:INSTANCE_SUGGESTIONS],
            attrs={"class": "vTextField", "autocomplete": "off"})}

    def clean(self) -> dict:
        data = super().clean()
        rule = None if self.instance._state.adding else self.instance
        consumer = rule.consumer if rule else data.get("consumer")
        instance_id = rule.service_instance_id if rule else data.get("service_instance_id")
        if self.errors:
            return data
        try:
            valid = rule_validate(RuleDraft(consumer, instance_id, data.get("priority")))
            if rule is None:
                rules_ensure_not_stored([valid])
            elif Rule.objects.filter(consumer=rule.consumer,
                                     service_definition=rule.service_definition,
                                     priority=valid.priority).exclude(pk=rule.pk).exists():
                raise InvalidParameter(
                    f"Another rule of {rule.consumer} for {rule.service_definition} already has "
                    f"priority {valid.priority}")
        except InvalidParameter as exc:
            raise forms.ValidationError(exc.message) from exc
        data["valid_rule"] = valid
        return data


class InCatalogFilter(admin.SimpleListFilter):
    title, parameter_name = "instance in the catalog", "in_catalog"

    def lookups(self, request, model_admin):
        return (("yes", "Yes"), ("no", "No"))

    def queryset(self, request, queryset: QuerySet) -> QuerySet:
        if self.value() not in ("yes", "no"):
            return queryset
        return queryset.filter(in_catalog=self.value() == "yes")


@admin.register(Rule)
class RuleAdmin(ImportExportMixin, admin.ModelAdmin):
    """Writes go through the rule services, like the API's. Four columns so that the list
    fits 1400 px; the service definition is the middle of the instance id."""

    transfer = RULES
    form = RuleAdminForm
    list_display = ("consumer_short", "instance", "priority", "updated")
    list_editable = ("priority",)
    list_filter = (name_filter("consumer", names.normalize_system_name),
                   name_filter("service_definition", names.normalize_service_definition),
                   InCatalogFilter)
    search_fields = ("consumer", "service_definition", "service_instance_id")
    # A consumer's rules in the order pull tries them (the consumer, priority index).
    ordering = ("consumer", "priority", "service_definition")
    show_full_result_count = False
    list_per_page = 100

    def get_queryset(self, request: HttpRequest) -> QuerySet[Rule]:
        known = ServiceInstance.objects.filter(
            service_instance_id=OuterRef("service_instance_id"))
        return super().get_queryset(request).annotate(in_catalog=Exists(known))

    @admin.display(description="consumer", ordering="consumer")
    def consumer_short(self, rule: Rule) -> str:
        return truncated(rule.consumer, 22)

    @admin.display(description="service instance id", ordering="service_instance_id")
    def instance(self, rule: Rule) -> str:
        shown = truncated(rule.service_instance_id, 42)
        if rule.in_catalog:
            return shown
        return format_html('{} <strong style="color: var(--error-fg)" title="{}">⚠&nbsp;unknown'
                           '</strong>', shown, NOT_IN_CATALOG)

    @admin.display(description="updated", ordering="updated_at")
    def updated(self, rule: Rule) -> str:
        return short_time(rule.updated_at, "%Y-%m-%d")

    @admin.display(description="in the catalog")
    def catalog(self, rule: Rule) -> str:
        return "Yes" if rule.in_catalog else format_html("<strong>⚠ {}</strong>", NOT_IN_CATALOG)

    def get_changelist_form(self, request: HttpRequest, **kwargs):
        # Django builds the list_editable form from a plain ModelForm: keep our validation.
        return super().get_changelist_form(request, form=RuleAdminForm, **kwargs)

    def get_readonly_fields(self, request: HttpRequest, obj: Rule | None = None):
        audit = ("created_by", "created_at", "updated_by", "updated_at")
        if obj is None:
            return ()
        return ("consumer", "service_definition", "service_instance_id", "catalog", *audit)

    def save_model(self, request: HttpRequest, obj: Rule, form: RuleAdminForm,
                   change: bool) -> None:
        requester = request.user.get_username()
        if change:
            saved = rule_priorities_modify(priorities={str(obj.pk): obj.priority},
                                           requester=requester)[0]
        else:
            saved = rules_store([form.cleaned_data["valid_rule"]], requester=requester)[0]
            known = ServiceInstance.objects.filter(service_instance_id=saved.service_instance_id)
            if not known.exists():  # the local catalog; the ServiceRegistry is not asked
                self.message_user(request, f"{saved.service_instance_id}: {NOT_IN_CATALOG}",
                                  messages.WARNING)
        obj.__dict__.update({f.attname: getattr(saved, f.attname) for f in Rule._meta.fields})
        obj._state.adding = False

    def delete_model(self, request: HttpRequest, obj: Rule) -> None:
        rule_delete_many(ids=[obj.pk])

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Rule]) -> None:
        rule_delete_many(ids=list(queryset.values_list("pk", flat=True)))

