from functools import partial

from django import forms
from django.contrib import admin, messages
from django.db.models import Exists, OuterRef, QuerySet
from django.http import HttpRequest
from django.utils.html import format_html

from api.admin_display import short_time, truncated
from api.admin_filters import NameInputFilter
from api.admin_forms import CheckedJSONField, DatalistInput
from conventions import names
from conventions.exceptions import InvalidParameter
from conventions.instance_ids import build_instance_id
from conventions.versions import normalize_version, validate_version
from store.admin_import import InstanceImportExport, RuleImportExport
from store.interfaces import InterfaceDraft, interface_validate, metadata_validate
from store.models import MAX_PRIORITY, Rule, ServiceInstance, ServiceInterface
from store.selectors.instances import instance_id_is_known, instance_id_suggestions
from store.services.instances import (
    ValidInstance,
    ValidInstanceUpdate,
    instance_delete_many,
    instance_remove_expired,
    instances_store,
    instances_update,
)
from store.services.rules import (
    RuleDraft,
    rule_delete_many,
    rule_priorities_modify,
    rule_validate,
    rules_ensure_not_stored,
    rules_store,
)


class ConsumerFilter(NameInputFilter):
    title, parameter_name, field = "consumer", "consumer", "consumer"
    normalize = staticmethod(names.normalize_system_name)


class ServiceDefinitionFilter(NameInputFilter):
    title, parameter_name, field = "service definition", "service_definition", "service_definition"
    normalize = staticmethod(names.normalize_service_definition)


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
            partial(instance_id_suggestions, limit=INSTANCE_SUGGESTIONS),
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
class RuleAdmin(RuleImportExport, admin.ModelAdmin):
    """Writes go through the rule services, like the API's. Four columns so that the list
    fits 1400 px; the service definition is the middle of the instance id."""

    form = RuleAdminForm
    list_display = ("consumer_short", "instance", "priority", "updated")
    list_editable = ("priority",)
    list_filter = (ConsumerFilter, ServiceDefinitionFilter, InCatalogFilter)
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
            if not instance_id_is_known(saved.service_instance_id):
                self.message_user(request, f"{saved.service_instance_id}: {NOT_IN_CATALOG}",
                                  messages.WARNING)
        obj.__dict__.update({f.attname: getattr(saved, f.attname) for f in Rule._meta.fields})
        obj._state.adding = False

    def delete_model(self, request: HttpRequest, obj: Rule) -> None:
        rule_delete_many(ids=[obj.pk])

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Rule]) -> None:
        rule_delete_many(ids=list(queryset.values_list("pk", flat=True)))


class ProviderFilter(NameInputFilter):
    title, parameter_name, field = "provider", "provider", "provider"
    normalize = staticmethod(names.normalize_system_name)


class InstanceServiceDefinitionFilter(NameInputFilter):
    title, parameter_name, field = "service definition", "service_definition", "service_definition"
    normalize = staticmethod(names.normalize_service_definition)


class ServiceInstanceAdminForm(forms.ModelForm):
    """The API's validation: names normalized and checked, metadata rules, unique id. The
    id (provider, service definition, version) is only set when adding, as in the API."""

    class Meta:
        model = ServiceInstance
        fields = ["provider", "service_definition", "version", "expires_at", "metadata"]
        field_classes = {"metadata": CheckedJSONField}
        help_texts = {
            "provider": "The providing system's name, e.g. TemperatureProvider (normalized as "
                        "in the API).",
            "service_definition": "e.g. temperatureInfo (normalized as in the API: "
                                  "temperature-info becomes temperatureInfo).",
            "version": "major.minor.patch; 1 and 1.0 become 1.0.0.",
            "expires_at": "Empty: never expires. Expired instances are not offered by pull "
                          "and are removed periodically.",
            "metadata": 'A JSON object, e.g. {"unit": "celsius", "allowExclusivity": 120} '
                        "(no . in keys; allowExclusivity: seconds a consumer may reserve it).",
        }

    def clean(self) -> dict:
        data = super().clean()
        if self.errors:
            return data
        adding = self.instance._state.adding
        try:
            data["metadata"] = metadata_validate(data.get("metadata"))
            if adding:
                data["provider"] = names.system_name(data.get("provider"))
                data["service_definition"] = names.service_definition(
                    data.get("service_definition"))
                data["version"] = validate_version(normalize_version(data.get("version")))
        except InvalidParameter as exc:
            raise forms.ValidationError(exc.message) from exc
        if adding:
            instance_key = build_instance_id(data["provider"], data["service_definition"],
                                             data["version"])
            if ServiceInstance.objects.filter(service_instance_id=instance_key).exists():
                raise forms.ValidationError(f"Service instance {instance_key} already exists")
        return data


class ServiceInterfaceInlineForm(forms.ModelForm):
    class Meta:
        model = ServiceInterface
        fields = ["template_name", "protocol", "policy", "properties"]
        field_classes = {"properties": CheckedJSONField}
        help_texts = {
            "template_name": "generic_http, generic_https, generic_mqtt or generic_mqtts "
                             "(their properties are checked), or any other template name.",
            "protocol": "Empty for the generic templates (http, https, tcp, ssl are implied); "
                        "needed for others.",
            "policy": "How consumers authenticate to the provider; a token policy makes pull "
                      "issue tokens.",
            "properties": 'generic_http(s): {"accessAddresses": ["10.0.0.5"], "accessPort": '
                          '8080, "basePath": "/temperature", "operations": {"query": {"path": '
                          '"/query", "method": "GET"}}}; generic_mqtt(s): accessAddresses, '
                          "accessPort, baseTopic, operations (a list).",
        }

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["protocol"].required = False  # known templates imply it
        self.fields["properties"].required = False  # `{}` is valid for other templates

    def clean(self) -> dict:
        data = super().clean()
        if self.errors or not data or data.get("DELETE"):
            return data
        try:
            valid = interface_validate(InterfaceDraft(
                data.get("template_name"), data.get("protocol"), data.get("policy"),
                data.get("properties")))
        except InvalidParameter as exc:
            raise forms.ValidationError(exc.message) from exc
        data["valid_interface"] = valid
        return data


class ServiceInterfaceInline(admin.StackedInline):
    model = ServiceInterface
    form = ServiceInterfaceInlineForm
    extra = 0
    min_num = 1
    fields = ("template_name", "protocol", "policy", "properties")

    def get_formset(self, request: HttpRequest, obj=None, **kwargs):
        # An instance needs at least one interface (Django ignores `validate_min` here).
        return super().get_formset(request, obj, validate_min=True, **kwargs)


@admin.register(ServiceInstance)
class ServiceInstanceAdmin(InstanceImportExport, admin.ModelAdmin):
    """Writes go through the instance services, like the API's: the instance and its
    interfaces are written in one call (in `save_related`, where the interface forms are
    known), so the ids are locked and the change is recorded for subscriptions."""

    form = ServiceInstanceAdminForm
    inlines = [ServiceInterfaceInline]
    list_display = ("service_instance_id", "provider", "service_definition", "version",
                    "expires_at", "updated_at")
    list_filter = (ProviderFilter, InstanceServiceDefinitionFilter)
    search_fields = ("service_instance_id",)
    ordering = ("service_instance_id",)
    actions = ["remove_expired"]

    def get_readonly_fields(self, request: HttpRequest, obj: ServiceInstance | None = None):
        audit = ("service_instance_id", "created_at", "updated_at")
        if obj is None:
            return audit
        return ("provider", "service_definition", "version", *audit)

    def save_model(self, request: HttpRequest, obj: ServiceInstance, form, change: bool) -> None:
        """Nothing yet: `save_related` writes the instance with its interfaces."""

    def save_related(self, request: HttpRequest, form, formsets, change: bool) -> None:
        for formset in formsets:
            formset.save(commit=False)  # fills new/changed/deleted_objects for the history
        interfaces = [f.cleaned_data["valid_interface"]
                      for formset in formsets for f in formset.forms
                      if f.cleaned_data and not f.cleaned_data.get("DELETE")]
        data, obj = form.cleaned_data, form.instance
        if change:
            saved = instances_update([ValidInstanceUpdate(
                obj.service_instance_id, data["expires_at"], data["metadata"], interfaces)])[0]
        else:
            saved = instances_store([ValidInstance(
                data["provider"], data["service_definition"], data["version"],
                data["expires_at"], data["metadata"], interfaces)])[0]
        obj.__dict__.update({f.attname: getattr(saved, f.attname)
                             for f in ServiceInstance._meta.fields})
        obj._state.adding = False

    def delete_model(self, request: HttpRequest, obj: ServiceInstance) -> None:
        instance_delete_many(instance_ids=[obj.service_instance_id])

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[ServiceInstance]) -> None:
        instance_delete_many(instance_ids=queryset.values_list("service_instance_id", flat=True))

    @admin.action(description="Remove instances that have expired")
    def remove_expired(self, request: HttpRequest, queryset: QuerySet[ServiceInstance]) -> None:
        self.message_user(request, f"{instance_remove_expired()} expired instance(s) removed.")
