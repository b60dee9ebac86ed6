"""A gunicorn worker that hands the verified client certificate to the application.

gunicorn verifies client certificates against TLS_CA_FILE during the handshake but does not
put them into the WSGI environ. This worker adds the peer certificate, as Python's ssl module
decodes it after verification, under `CLIENT_CERT_ENVIRON_KEY`. Clients cannot forge it:
header values only ever reach the environ as `HTTP_*` keys.
"""
import ssl

from gunicorn.workers.sync import SyncWorker

CLIENT_CERT_ENVIRON_KEY = "arrowhead.client_certificate"


class ClientCertificateWorker(SyncWorker):
    def handle_request(self, listener, req, client, addr) -> None:
        certificate = client.getpeercert() if isinstance(client, ssl.SSLSocket) else None
        application = self.wsgi

        def with_certificate(environ, start_response):
            environ[CLIENT_CERT_ENVIRON_KEY] = certificate or None
            return application(environ, start_response)

        self.wsgi = with_certificate  # one request at a time in a sync worker
        try:
            super().handle_request(listener, req, client, addr)
        finally:
            self.wsgi = application
