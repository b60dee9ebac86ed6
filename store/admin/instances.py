"""The service instances' admin (the instance services write, with the API's validation and
messages): an instance and its interfaces, edited together and written in one call."""
from django import forms
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from api.admin_filters import name_filter
from api.admin_forms import CheckedJSONField
from conventions import names
from conventions.exceptions import InvalidParameter
from conventions.instance_ids import build_instance_id
from conventions.versions import normalize_version, validate_version
from store.admin_import import ImportExportMixin
from store.files import INSTANCES
from store.interfaces import InterfaceDraft, interface_validate, metadata_validate
from store.models import ServiceInstance, ServiceInterface
from store.services.instances import (
    ValidInstance,
    instance_delete_many,
    instance_remove_expired,
    instances_store,
)


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
class ServiceInstanceAdmin(ImportExportMixin, admin.ModelAdmin):
    """Writes go through the instance services, like the API's: the instance and its
    interfaces are written in one call (in `save_related`, where the interface forms are
    known), so the ids are locked and the change is recorded for subscriptions."""

    transfer = INSTANCES
    form = ServiceInstanceAdminForm
    inlines = [ServiceInterfaceInline]
    list_display = ("service_instance_id", "provider", "service_definition", "version",
                    "expires_at", "updated_at")
    list_filter = (name_filter("provider", names.normalize_system_name),
                   name_filter("service_definition", names.normalize_service_definition))
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
        parts = ((obj.provider, obj.service_definition, obj.version) if change else
                 (data["provider"], data["service_definition"], data["version"]))
        saved = instances_store([ValidInstance(*parts, data["expires_at"], data["metadata"],
                                               interfaces)], update=change)[0]
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
