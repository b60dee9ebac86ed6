"""A test-only endpoint that logs, in front of the real URL configuration."""
import logging

from django.urls import path
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from config.urls import urlpatterns as service_urlpatterns

LOGGING_PROBE = "/serviceorchestration/probe/log"
logger = logging.getLogger("serviceorchestration.probe")


class LoggingProbe(APIView):
    """Logs `?level=` (default WARNING) `?times=` times (default 1) and answers 200."""

    def get(self, request: Request) -> Response:
        level = getattr(logging, request.query_params.get("level", "WARNING"))
        for n in range(int(request.query_params.get("times", "1"))):
            logger.log(level, "probe record %d of %s", n, request.user.name)
        return Response({"logged": True})


urlpatterns = [path(LOGGING_PROBE[1:], LoggingProbe.as_view()), *service_urlpatterns]
handler404 = "api.views.not_found"
