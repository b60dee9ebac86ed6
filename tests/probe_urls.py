"""Test-only endpoints in front of the real URL configuration, to exercise the framework
behaviour (errors, identity, management permission) that every real endpoint relies on."""
from django.http import Http404, HttpRequest, HttpResponse
from django.urls import path
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.operations import ServiceOperation
from config.urls import urlpatterns as service_urlpatterns

PROBE = "/serviceorchestration/probe"


class WhoAmIProbe(APIView):
    def get(self, request: Request) -> Response:
        return Response({"name": request.user.name, "operator": request.user.is_operator})

    def post(self, request: Request) -> Response:
        return Response({"name": request.user.name, "data": request.data})


class CrashProbe(APIView):
    def get(self, request: Request) -> Response:
        raise RuntimeError("secret internals: password=hunter2")


class Http404Probe(APIView):
    def get(self, request: Request) -> Response:
        raise Http404("gone")


class ManagementWithPermissionProbe(APIView):
    service_operation = ServiceOperation("probeManagement", "with-permission", True,
                                         "identity.view_identitytoken")

    def get(self, request: Request) -> Response:
        return Response({"name": request.user.name})


class ManagementWithoutPermissionProbe(APIView):
    service_operation = ServiceOperation("probeManagement", "without-permission", True, None)

    def get(self, request: Request) -> Response:
        return Response({"name": request.user.name})


def plain_django_crash(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("secret internals outside DRF")


urlpatterns = [
    path(f"{PROBE[1:]}/whoami", WhoAmIProbe.as_view()),
    path(f"{PROBE[1:]}/crash", CrashProbe.as_view()),
    path(f"{PROBE[1:]}/http404", Http404Probe.as_view()),
    path(f"{PROBE[1:]}/plain-crash", plain_django_crash),
    path(f"{PROBE[1:]}/mgmt/with-permission", ManagementWithPermissionProbe.as_view()),
    path(f"{PROBE[1:]}/mgmt/without-permission", ManagementWithoutPermissionProbe.as_view()),
    *service_urlpatterns,
]

handler400 = "api.errors.bad_request"
handler403 = "api.errors.permission_denied"
handler404 = "api.views.not_found"
handler500 = "api.errors.server_error"
