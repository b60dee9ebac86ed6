"""One line of text for what the service answers."""
import json
from typing import Any


def describe_result(result: dict[str, Any]) -> str:
    """One line for a pull result: its id, where to call it, its tokens, its metadata."""
    parts = [result["serviceInstanceId"]]
    for interface in result.get("interfaces", []):
        properties = interface.get("properties", {})
        addresses = ",".join(properties.get("accessAddresses", []))
        parts.append(f"{interface.get('templateName')} {addresses}:{properties.get('accessPort')}"
                     f"{properties.get('basePath', '')} policy={interface.get('policy')}")
    for by_operation in (result.get("authorizationTokens") or {}).values():
        for operation, token in by_operation.items():
            parts.append(f"token[{operation}]={token['token']}")
    if result.get("metadata"):
        parts.append("metadata=" + json.dumps(result["metadata"], sort_keys=True))
    return "  ".join(parts)
