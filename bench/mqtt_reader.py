"""A lean MQTT 3.1.1 subscriber for the push benchmarks' listeners: one connection, one
subscription, a thread that reads whatever the socket holds at once and acknowledges every
QoS-1 message of the read in one write.

The benchmarks share two cores between the service they measure and their own listener. paho
reads a packet a few bytes per system call and writes each acknowledgement on its own: at ten
thousand notifications it took about a fifth of the fan-out's CPU (docs/performance.md, "The
bench's listener"). What this one does per message is slicing its topic and payload out of
the read. It speaks only what a subscriber needs: CONNECT (clean session), SUBSCRIBE,
PUBLISH at QoS 0 or 1 (PUBACK), PINGREQ when idle, DISCONNECT.
"""
import socket
import struct
import threading
import time
from collections.abc import Callable

CONNECT, CONNACK, PUBLISH, PUBACK, SUBSCRIBE, SUBACK = 0x10, 0x20, 0x30, 0x40, 0x82, 0x90
PINGREQ, PINGRESP, DISCONNECT = b"\xc0\x00", 0xD0, b"\xe0\x00"
READ = 1 << 18  # bytes asked of the socket at once
SUBSCRIBE_ID = 1

# on_message(arrived, topic, payload): `arrived` is time.monotonic() just after the read
# that completed the message.
OnMessage = Callable[[float, str, bytes], None]


class ProtocolError(Exception):
    """The broker refused us or sent what a subscriber does not expect."""


def encoded_string(text: str) -> bytes:
    data = text.encode()
    return struct.pack("!H", len(data)) + data


def remaining_length(length: int) -> bytes:
    encoded = bytearray()
    while True:
        length, digit = divmod(length, 128)
        encoded.append(digit | (0x80 if length else 0))
        if not length:
            return bytes(encoded)


def packet(first: int, body: bytes) -> bytes:
    return bytes([first]) + remaining_length(len(body)) + body


def connect_packet(client_id: str, keepalive: int) -> bytes:
    # protocol name and level 4 (3.1.1), flags: clean session only
    return packet(CONNECT, encoded_string("MQTT") + bytes([4, 0x02])
                  + struct.pack("!H", keepalive) + encoded_string(client_id))


def subscribe_packet(topic: str, qos: int) -> bytes:
    return packet(SUBSCRIBE, struct.pack("!H", SUBSCRIBE_ID) + encoded_string(topic)
                  + bytes([qos]))


def packets(buffer: bytearray) -> tuple[list[tuple[int, int, int]], int]:
    """The complete packets at the start of `buffer` as (first byte, body start, body end),
    and where the first incomplete one begins."""
    found, at, size = [], 0, len(buffer)
    while at + 2 <= size:
        length, multiplier, cursor = 0, 1, at + 1
        while True:
            if cursor >= size:
                return found, at
            digit = buffer[cursor]
            cursor += 1
            length += (digit & 0x7F) * multiplier
            if not digit & 0x80:
                break
            multiplier *= 128
            if multiplier > 128 ** 3:
                raise ProtocolError("malformed remaining length")
        if cursor + length > size:
            return found, at
        found.append((buffer[at], cursor, cursor + length))
        at = cursor + length
    return found, at


class Subscriber:
    """Connected and subscribed by `start()` (or ProtocolError / OSError); `on_message` is
    called on the reading thread until `stop()`."""

    def __init__(self, host: str, port: int, topic: str, on_message: OnMessage, *,
                 client_id: str, qos: int = 1, keepalive: int = 60) -> None:
        self.host, self.port, self.topic, self.qos = host, port, topic, qos
        self.client_id, self.keepalive = client_id, keepalive
        self.on_message = on_message
        self.error: BaseException | None = None  # what ended the reading thread, if not stop()
        self._socket: socket.socket | None = None
        self._buffer = bytearray()
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()

    def start(self, timeout: float = 10.0) -> None:
        self._socket = socket.create_connection((self.host, self.port), timeout=timeout)
        try:
            self._socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._socket.sendall(connect_packet(self.client_id, self.keepalive))
            first, body = self._expect(CONNACK)
            if len(body) != 2 or body[1] != 0:
                raise ProtocolError(f"connection refused: CONNACK {bytes(body).hex()}")
            self._socket.sendall(subscribe_packet(self.topic, self.qos))
            first, body = self._expect(SUBACK)
            if bytes(body[:2]) != struct.pack("!H", SUBSCRIBE_ID) or body[2:] == b"\x80":
                raise ProtocolError(f"subscription refused: SUBACK {bytes(body).hex()}")
        except BaseException:
            self._socket.close()
            raise
        self._socket.settimeout(self.keepalive / 2)
        self._thread = threading.Thread(target=self._read, name=f"mqtt-{self.client_id}",
                                        daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._socket is not None:
            try:
                self._socket.sendall(DISCONNECT)
                self._socket.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already gone
        if self._thread is not None:
            self._thread.join(10)
        if self._socket is not None:
            self._socket.close()

    def _expect(self, kind: int) -> tuple[int, memoryview]:
        """The next packet, which must be of `kind` (before the thread runs)."""
        while True:
            found, used = packets(self._buffer)
            if found:
                first, start, end = found[0]
                body = memoryview(bytes(self._buffer[start:end]))
                del self._buffer[:end]
                if first & 0xF0 != kind & 0xF0:
                    raise ProtocolError(f"expected packet {kind:#x}, got {first:#x}")
                return first, body
            chunk = self._socket.recv(READ)
            if not chunk:
                raise ProtocolError("the broker closed the connection")
            self._buffer += chunk

    def _read(self) -> None:
        sock, buffer, on_message = self._socket, self._buffer, self.on_message
        try:
            while not self._stopping.is_set():
                try:
                    chunk = sock.recv(READ)
                except TimeoutError:
                    sock.sendall(PINGREQ)  # idle for half the keepalive
                    continue
                if not chunk:
                    if not self._stopping.is_set():
                        raise ProtocolError("the broker closed the connection")
                    return
                arrived = time.monotonic()
                buffer += chunk
                found, used = packets(buffer)
                acknowledgements = bytearray()
                for first, start, end in found:
                    kind = first & 0xF0
                    if kind == PUBLISH:
                        qos = (first >> 1) & 0x03
                        topic_end = start + 2 + (buffer[start] << 8 | buffer[start + 1])
                        topic = buffer[start + 2:topic_end].decode()
                        if qos == 1:
                            acknowledgements += b"\x40\x02" + buffer[topic_end:topic_end + 2]
                            topic_end += 2
                        elif qos:
                            raise ProtocolError("a QoS-2 message on a QoS-1 subscription")
                        on_message(arrived, topic, bytes(buffer[topic_end:end]))
                    elif kind != PINGRESP:
                        raise ProtocolError(f"unexpected packet {first:#x}")
                del buffer[:used]
                if acknowledgements:
                    sock.sendall(acknowledgements)
        except BaseException as error:  # noqa: BLE001 - kept for the caller to see
            if not self._stopping.is_set():
                self.error = error
