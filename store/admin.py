from django import forms
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from config.conventions import names
from config.exceptions import InvalidParameter
from store.admin_filters import NameInputFilter
from store.models import Rule
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
