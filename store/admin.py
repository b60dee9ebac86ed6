from django import forms
from django.contrib import admin
from django.db.models import F, QuerySet
from django.http import HttpRequest
from django.utils import timezone

from config.conventions import names
from config.conventions.instance_ids import build_instance_id
from config.conventions.versions import normalize_version, validate_version
from config.exceptions import InvalidParameter
from config.forms import CheckedJSONField
from store.admin_filters import NameInputFilter
from store.changes import change_record
from store.interfaces import InterfaceDraft, interface_validate, metadata_validate
from store.models import Rule, ServiceInstance, ServiceInterface
from store.services.instances import instance_delete_many, instance_remove_expired
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


class RuleAdminForm(forms.ModelForm):
    """The API's validation: names normalized and checked, priority positive, no second rule
    with the same consumer, service definition and priority."""

    class Meta:
        model = Rule
        fields = ["consumer", "service_instance_id", "priority"]

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


@admin.register(Rule)
class RuleAdmin(admin.ModelAdmin):
    """Writes go through the rule services, like the API's."""

    form = RuleAdminForm
    list_display = ("consumer", "service_definition", "service_instance_id", "priority",
                    "updated_by", "updated_at")
    list_editable = ("priority",)
    list_filter = (ConsumerFilter, ServiceDefinitionFilter)
    search_fields = ("consumer", "service_definition", "service_instance_id")
    ordering = ("consumer", "service_definition", "priority")
    show_full_result_count = False
    list_per_page = 100

    def get_changelist_form(self, request: HttpRequest, **kwargs):
        # Django builds the list_editable form from a plain ModelForm: keep our validation.
        return super().get_changelist_form(request, form=RuleAdminForm, **kwargs)

    def get_readonly_fields(self, request: HttpRequest, obj: Rule | None = None):
        audit = ("created_by", "created_at", "updated_by", "updated_at")
        if obj is None:
            return ()
        return ("consumer", "service_definition", "service_instance_id", *audit)

    def save_model(self, request: HttpRequest, obj: Rule, form: RuleAdminForm,
                   change: bool) -> None:
        requester = request.user.get_username()
        if change:
            saved = rule_priorities_modify(priorities={str(obj.pk): obj.priority},
                                           requester=requester)[0]
        else:
            saved = rules_store([form.cleaned_data["valid_rule"]], requester=requester)[0]
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
    """The API's validation: names normalized and checked, metadata rules, unique id."""

    class Meta:
        model = ServiceInstance
        fields = ["provider", "service_definition", "version", "expires_at", "metadata"]
        field_classes = {"metadata": CheckedJSONField}

    def clean(self) -> dict:
        data = super().clean()
        if self.errors:
            return data
        try:
            data["provider"] = names.system_name(data.get("provider"))
            data["service_definition"] = names.service_definition(data.get("service_definition"))
            data["version"] = validate_version(normalize_version(data.get("version")))
            data["metadata"] = metadata_validate(data.get("metadata"))
        except InvalidParameter as exc:
            raise forms.ValidationError(exc.message) from exc
        instance_key = build_instance_id(data["provider"], data["service_definition"],
                                         data["version"])
        clash = ServiceInstance.objects.filter(service_instance_id=instance_key)
        if not self.instance._state.adding:
            clash = clash.exclude(pk=self.instance.pk)
        if clash.exists():
            raise forms.ValidationError(f"Service instance {instance_key} already exists")
        for field in ("provider", "service_definition", "version", "metadata"):
            setattr(self.instance, field, data[field])
        self.instance.service_instance_id = instance_key
        return data


class ServiceInterfaceInlineForm(forms.ModelForm):
    class Meta:
        model = ServiceInterface
        fields = ["template_name", "protocol", "policy", "properties"]
        field_classes = {"properties": CheckedJSONField}

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
        data.update(template_name=valid.template_name, protocol=valid.protocol,
                    policy=valid.policy, properties=valid.properties)
        for field in ("template_name", "protocol", "policy", "properties"):
            setattr(self.instance, field, data[field])
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
class ServiceInstanceAdmin(admin.ModelAdmin):
    form = ServiceInstanceAdminForm
    inlines = [ServiceInterfaceInline]
    list_display = ("service_instance_id", "provider", "service_definition", "version",
                    "expires_at", "updated_at")
    list_filter = (ProviderFilter, InstanceServiceDefinitionFilter)
    search_fields = ("service_instance_id",)
    readonly_fields = ("service_instance_id", "created_at", "updated_at")
    ordering = ("service_instance_id",)
    actions = ["remove_expired"]

    def save_model(self, request: HttpRequest, obj: ServiceInstance, form, change: bool) -> None:
        obj.updated_at = timezone.now()
        if not change:
            obj.created_at = obj.updated_at
        super().save_model(request, obj, form, change)
        change_record(instance_ids=[obj.service_instance_id])

    def delete_model(self, request: HttpRequest, obj: ServiceInstance) -> None:
        instance_delete_many(instance_ids=[obj.service_instance_id])

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[ServiceInstance]) -> None:
        instance_delete_many(instance_ids=queryset.values_list("service_instance_id", flat=True))

    def save_formset(self, request: HttpRequest, form, formset, change: bool) -> None:
        formset.save(commit=False)  # sorts out deleted_objects
        for deleted in formset.deleted_objects:
            deleted.delete()
        kept = [f.instance for f in formset.forms
                if f.cleaned_data and not f.cleaned_data.get("DELETE")]
        # Positions follow the form order; park them first so the unique position holds.
        ServiceInterface.objects.filter(instance=form.instance).update(position=F("position") + 1000)
        for position, interface in enumerate(kept):
            interface.position = position
            interface.instance = form.instance
            interface.save()

    @admin.action(description="Remove instances that have expired")
    def remove_expired(self, request: HttpRequest, queryset: QuerySet[ServiceInstance]) -> None:
        self.message_user(request, f"{instance_remove_expired()} expired instance(s) removed.")
