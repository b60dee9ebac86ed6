"""The wire form of a pull/push result (SPEC §5): exactly `OrchestrationResponseSerializer`'s
data, by the renderer compiled from it (api.shapes)."""
from api.shapes import compile_renderer
from orchestration.pull.serializers import OrchestrationResponseSerializer

orchestration_response_data = compile_renderer(OrchestrationResponseSerializer)
