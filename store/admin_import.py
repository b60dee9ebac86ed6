"""Import and Export buttons on the rule and service instance change lists, with the commands'
files and services (store.files); these views only ask and show. Import: upload → preview →
confirm. The file waits in the session (several web processes may serve the steps), and the
confirmation applies only the previewed plan (its digest). The page is laid out as the admin's
change forms are (its fieldset template, error note and list, submit row)."""
from django import forms
from django.contrib import messages
from django.contrib.admin import helpers
from django.core.exceptions import PermissionDenied
from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseRedirect,
    StreamingHttpResponse,
)
from django.template.response import TemplateResponse
from django.urls import path, reverse

from conventions.exceptions import ArrowheadError, InvalidParameter
from store.file_entries import BadEntries
from store.files import Transfer
from store.services.imports import ImportPlan

SHOWN = 500  # lines of each list on the page: bad entries, and each list of the preview


class ImportForm(forms.Form):
    file = forms.FileField(help_text="JSON, as Export writes it (or the API's create body).")
    update = forms.BooleanField(required=False, label="Update entries that differ",
                                help_text="Without it, an import is refused when a stored "
                                          "entry differs from the file's.")
    replace = forms.BooleanField(required=False, label="Remove entries the file does not hold")

    def __init__(self, *args, transfer: Transfer, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.transfer, self.entries, self.content, self.plan = transfer, None, None, None

    def clean(self) -> dict:
        data = super().clean()
        upload = data.get("file")
        if upload is None:
            return data
        try:
            try:
                self.content = upload.read().decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InvalidParameter(f"Cannot read {upload.name}: {exc}") from exc
            self.entries, self.plan = self.transfer.check(
                self.content, upload.name, replace=data.get("replace", False),
                update=data.get("update", False))
        except BadEntries as exc:
            raise forms.ValidationError(self._listed(exc)) from exc
        except InvalidParameter as exc:
            raise forms.ValidationError(exc.message) from exc
        return data

    def _listed(self, bad: BadEntries) -> list[str]:
        """The summary, then the bad entries (the first SHOWN, and how many more)."""
        hint = (f" Tick “Update entries that differ” to overwrite the {bad.differing} that "
                "differ." if bad.differing else "")
        lines = [f"{bad.summary}.{hint}", *bad.problems[:SHOWN]]
        rest = len(bad.problems) - SHOWN
        if rest > 0:
            lines.append(f"… and {rest} more: manage.py import_{self.transfer.noun}s FILE "
                         "--dry-run lists them all.")
        return lines


class ImportExportMixin:
    """For a ModelAdmin: the change list's Import and Export buttons and their pages, for its
    `transfer` (store.files.RULES or INSTANCES)."""

    transfer: Transfer
    change_list_template = "admin/store/change_list_import_export.html"

    def get_urls(self):
        name = self._url_name()
        view = self.admin_site.admin_view
        return [
            path("import/", view(self.import_view), name=f"{name}_import"),
            path("import/confirm/", view(self.import_confirm_view), name=f"{name}_import_confirm"),
            path("export/", view(self.export_view), name=f"{name}_export"),
            *super().get_urls(),
        ]

    def changelist_view(self, request: HttpRequest, extra_context: dict | None = None):
        extra_context = {**(extra_context or {}), "can_import": self.has_import_permission(request)}
        return super().changelist_view(request, extra_context)

    def has_import_permission(self, request: HttpRequest) -> bool:
        """An import may create, change and remove entries: it needs all three permissions."""
        return (self.has_add_permission(request) and self.has_change_permission(request)
                and self.has_delete_permission(request))

    def export_view(self, request: HttpRequest) -> StreamingHttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        return StreamingHttpResponse(
            self.transfer.export(), content_type="application/json",
            headers={"Content-Disposition": f'attachment; filename="{self.transfer.filename}"'})

    def import_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_import_permission(request):
            raise PermissionDenied
        form = ImportForm(request.POST or None, request.FILES or None, transfer=self.transfer)
        plan = None
        if request.method == "POST" and form.is_valid():
            plan = form.plan
            request.session[self._session_key()] = {
                "source": form.cleaned_data["file"].name, "content": form.content,
                "replace": form.cleaned_data["replace"], "update": form.cleaned_data["update"],
                "digest": plan.digest}
        return self._page(request, form=form, plan=plan)

    def import_confirm_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_import_permission(request):
            raise PermissionDenied
        pending = request.session.get(self._session_key())
        if (request.method != "POST" or not pending
                or request.POST.get("digest") != pending["digest"]):
            messages.error(request, "Nothing to confirm: upload the file again.")
            return HttpResponseRedirect(self._url("import"))
        try:
            # Checked at the preview; what differs now, the plan's digest finds.
            entries = self.transfer.read(pending["content"], pending["source"]).valid(
                pending["source"])
            done = self.transfer.apply(entries, requester=request.user.get_username(),
                                       replace=pending["replace"], update=pending["update"],
                                       expected=pending["digest"])
        except ArrowheadError as exc:
            messages.error(request, exc.message)
            return HttpResponseRedirect(self._url("import"))
        finally:
            request.session.pop(self._session_key(), None)
        messages.success(request, f"Imported {pending['source']}: {len(done.created)} created, "
                                  f"{len(done.updated)} updated, {len(done.unchanged)} unchanged, "
                                  f"{len(done.removed)} removed.")
        return HttpResponseRedirect(self._url("changelist"))

    def _page(self, request: HttpRequest, *, form: ImportForm,
              plan: ImportPlan | None) -> TemplateResponse:
        fieldsets = [(None, {"fields": list(form.fields)})]
        context = {
            **self.admin_site.each_context(request), "opts": self.opts, "form": form,
            "adminform": helpers.AdminForm(form, fieldsets, {}, model_admin=self),
            "errors": form.errors, "title": f"Import {self.opts.verbose_name_plural}",
            "has_view_permission": self.has_view_permission(request), "plan": plan,
            "sections": plan and [
                (title, len(lines), lines[:SHOWN], max(len(lines) - SHOWN, 0))
                for title, lines in (("To create", plan.created), ("To update", plan.updated),
                                     ("Unchanged", plan.unchanged), ("To remove", plan.removed))],
            "changes": bool(plan and (plan.created or plan.updated or plan.removed)),
            "command": f"import_{self.transfer.noun}s", "confirm_url": self._url("import_confirm"),
        }
        return TemplateResponse(request, "admin/store/import.html", context)

    def _session_key(self) -> str:
        return f"store-import-{self.opts.model_name}"

    def _url_name(self) -> str:
        return f"{self.opts.app_label}_{self.opts.model_name}"

    def _url(self, view: str) -> str:
        return reverse(f"{self.admin_site.name}:{self._url_name()}_{view}")
