"""The one error both notification transports raise (notifications/mqtt_publishing.py,
notifications/http_delivery.py): a failed send, and whether trying it again later can help."""


class TransportError(Exception):
    """A failed send. `transient`: the broker or endpoint may accept it later (retry);
    otherwise retrying cannot help (the configuration or the endpoint refuses it).
    `not_http`: the destination accepted the connection but did not answer in HTTP (garbage,
    or closed without an answer): retried, but only a bounded number of times."""

    def __init__(self, message: str, *, transient: bool, not_http: bool = False) -> None:
        super().__init__(message)
        self.transient = transient
        self.not_http = not_http

