"""The MQTT interface's way in (issue 16): each request is answered by running the HTTP
operation it mirrors through the project's own WSGI application, in this process. Validation,
identity, permissions, the services and the error envelope are therefore the HTTP
operation's, not a second copy: only the transport differs.

The `authentication` field is the value of the HTTP `Authorization: Bearer` header
(`SYSTEM//<name>`, `IDENTITY-TOKEN//<token>`, as the reference's MQTT filters read it). Under
the certificate policy it is the requester's certificate (Base64 of its PEM), verified here
(identity.presented_certificates) and handed on as an HTTPS client's would be. The
answer's `receiver` is the requester the authentication identified; an error's `origin` is the
request topic, as the reference has it.
"""
import functools
import io
import json
import urllib.parse
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.handlers.wsgi import WSGIHandler

from identity.authentication import REQUESTER_ENVIRON_KEY
from identity.certificates import CLIENT_CERT_ENVIRON_KEY
from identity.presented_certificates import (
    PresentedCertificateError,
    presented_certificate,
)
from mqtt_api.messages import MqttRequest
from mqtt_api.operations import OPERATIONS, PATH, QUERY, Operation

PATH_PREFIX = "/serviceorchestration/"

@functools.cache
def _wsgi() -> WSGIHandler:
    return WSGIHandler()


@dataclass
class Answer:
    """What to publish on the response topic."""

    status: int
    payload: Any
    receiver: str | None = None


def error_answer(status: int, message: str, origin: str) -> Answer:
    kind = {400: "INVALID_PARAMETER", 401: "AUTH", 403: "FORBIDDEN", 404: "DATA_NOT_FOUND",
            503: "EXTERNAL_SERVER_ERROR"}.get(status, "INTERNAL_SERVER_ERROR")
    return Answer(status, {"errorMessage": message, "errorCode": status,
                           "exceptionType": kind, "origin": origin})


def answer(topic: str, request: MqttRequest) -> Answer:
    """Run the operation of `topic` (a full request topic) for `request`."""
    base = settings.MQTT_API_BASE_TOPIC
    operation = OPERATIONS.get(topic[len(base):]) if topic.startswith(base) else None
    if operation is None:
        return error_answer(400, f"Unknown operation: {topic.rsplit('/', 1)[-1]}", topic)
    certificate = None
    if settings.AUTHENTICATION_POLICY == "certificate":  # identity before the payload, as HTTP
        try:
            certificate = presented_certificate(request.authentication, settings.TLS_CA_FILE)
        except PresentedCertificateError as error:
            return error_answer(401, str(error), topic)
    try:
        path, query, body = _http_parts(operation, request)
    except ValueError as error:
        return error_answer(400, f"Could not parse payload. Reason: {error}", topic)
    environ = _environ(operation.method, path, query, body,
                       request.authentication if certificate is None else None)
    if certificate is not None:
        environ[CLIENT_CERT_ENVIRON_KEY] = certificate
    status, content_type, content = _run(environ)
    receiver = environ.get(REQUESTER_ENVIRON_KEY)
    payload = _payload(status, content_type, content, topic)
    if status >= 400 and isinstance(payload, dict) and isinstance(payload.get("errorMessage"),
                                                                    str):
        # Messages that name the request's URL (the certificate policy's) name the topic.
        payload["errorMessage"] = payload["errorMessage"].replace(
            f"http://{environ['SERVER_NAME']}{path}", topic)
    return Answer(status, payload, receiver)


def _http_parts(operation: Operation, request: MqttRequest) -> tuple[str, str, bytes]:
    path, query, body = PATH_PREFIX + operation.path, [], b""
    payload = request.payload
    if operation.payload == PATH:
        if not isinstance(payload, str) or not payload.strip():
            raise ValueError("a subscription id (a JSON string) is expected")
        path += urllib.parse.quote(payload.strip(), safe="")
    elif operation.payload == QUERY:
        if payload is not None:
            if type(payload) is not list or not all(isinstance(v, str) for v in payload):
                raise ValueError("a JSON array of strings is expected")
            query += [(operation.query_name, value) for value in payload]
    elif payload is not None:
        body = json.dumps(payload, separators=(",", ":")).encode()
    query += [(name, request.params[name]) for name in operation.params
              if name in request.params]
    return path, urllib.parse.urlencode(query), body


def _environ(method: str, path: str, query: str, body: bytes,
             authentication: str | None) -> dict[str, Any]:
    environ: dict[str, Any] = {
        "REQUEST_METHOD": method, "SCRIPT_NAME": "", "PATH_INFO": path, "QUERY_STRING": query,
        "SERVER_NAME": "localhost", "SERVER_PORT": "80", "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1", "HTTP_ACCEPT": "application/json",
        "wsgi.version": (1, 0), "wsgi.url_scheme": "http", "wsgi.input": io.BytesIO(body),
        "wsgi.errors": io.StringIO(), "wsgi.multithread": True, "wsgi.multiprocess": True,
        "wsgi.run_once": False, "CONTENT_LENGTH": str(len(body)),
    }
    if body:
        environ["CONTENT_TYPE"] = "application/json"
    if authentication:
        environ["HTTP_AUTHORIZATION"] = f"Bearer {authentication}"
    return environ


def _run(environ: dict[str, Any]) -> tuple[int, str, bytes]:
    started: dict[str, Any] = {}

    def start_response(status: str, headers: list[tuple[str, str]], exc_info=None) -> None:
        started["status"], started["headers"] = status, headers

    response = _wsgi()(environ, start_response)
    try:
        content = b"".join(response)
    finally:
        response.close()
    headers = {name.lower(): value for name, value in started["headers"]}
    return int(started["status"].split()[0]), headers.get("content-type", ""), content


def _payload(status: int, content_type: str, content: bytes, topic: str) -> Any:
    """The HTTP answer's body as the template's payload: JSON as its value, text (a
    subscription id) as a string, nothing as "". An error envelope's origin becomes the
    topic."""
    if not content:
        return ""
    if not content_type.startswith("application/json"):
        return content.decode("utf-8", "replace")
    payload = json.loads(content)
    if status >= 400 and isinstance(payload, dict) and "origin" in payload:
        payload["origin"] = topic
    return payload
