from django.conf import settings
from django.contrib import admin
from django.urls import include, path, re_path
from django.views.generic import RedirectView
from django.views.static import serve
from drf_spectacular.renderers import OpenApiYamlRenderer, OpenApiYamlRenderer2
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from api.json_media import SchemaJSONRenderer, SchemaJSONRenderer2
from api.views import EchoApi, NotFoundApi
from observability.health_endpoint import HealthApi
from observability.metrics_endpoint import metrics

# The admin names the product, with the name the OpenAPI document has (docs/admin.md).
PRODUCT = settings.SPECTACULAR_SETTINGS["TITLE"]
admin.site.site_header = PRODUCT
admin.site.site_title = f"{PRODUCT} admin"
admin.site.index_title = f"{PRODUCT} administration"

urlpatterns = [
    path("", RedirectView.as_view(url="/api/docs/", permanent=False)),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(renderer_classes=[
        OpenApiYamlRenderer, OpenApiYamlRenderer2, SchemaJSONRenderer, SchemaJSONRenderer2]),
        name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="swagger-ui"),
    path("serviceorchestration/monitor/echo", EchoApi.as_view()),
    path("serviceorchestration/monitor/health", HealthApi.as_view()),
    # Pull first: Django tries the patterns in order, and every include that fails to match
    # costs its patterns' bookkeeping; pull is the hot path (docs/performance.md).
    path("serviceorchestration/orchestration/", include("orchestration.pull.urls")),
    path("serviceorchestration/orchestration/", include("store.urls")),
    path("serviceorchestration/orchestration/", include("subscriptions.urls")),
    path("serviceorchestration/orchestration/", include("orchestration.locks.urls")),
    path("serviceorchestration/authorization-token/", include("orchestration.tokens.urls")),
    path("serviceorchestration/general/", include("general.urls")),
    path("metrics", metrics),  # Prometheus; off unless METRICS_ENABLED (docs/metrics.md)
]

if settings.SERVE_STATIC:
    urlpatterns.append(
        re_path(r"^static/(?P<path>.*)$", serve, {"document_root": settings.STATIC_ROOT})
    )

# Last: every other path answers with the error envelope (401 without identity, else 404).
urlpatterns.append(re_path(r"^.*$", NotFoundApi.as_view()))

handler400 = "api.errors.bad_request"
handler403 = "api.errors.permission_denied"
handler404 = "api.views.not_found"
handler500 = "api.errors.server_error"
