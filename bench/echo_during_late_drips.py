"""Worst echo latency while clients keep dripping past their header deadline, against a server
already running on loopback (docs/performance.md, "closing late connections"):

    SERVER_HEADER_TIMEOUT_SECONDS=2 WEB_CONCURRENCY=1 make run   # in another shell, or gunicorn
    .venv/bin/python bench/echo_during_late_drips.py PORT

Four clients each send a partial request head and then one byte every 0.1 s for 6 s, over and
over; meanwhile echo is called 40 times, 0.2 s apart, and the slowest answer is printed.
"""
import socket
import sys
import threading
import time
import urllib.request

DRIPPERS = 4


def drip(port: int, stop: threading.Event) -> None:
    while not stop.is_set():
        try:
            with socket.create_connection(("127.0.0.1", port)) as connection:
                connection.sendall(b"GET / HTTP/1.1\r\nX-Slow: ")
                end = time.monotonic() + 6
                while time.monotonic() < end and not stop.wait(0.1):
                    connection.send(b"a")
        except OSError:
            pass


def main() -> None:
    port = int(sys.argv[1])
    stop = threading.Event()
    for _ in range(DRIPPERS):
        threading.Thread(target=drip, args=(port, stop), daemon=True).start()
    time.sleep(1)
    worst = 0.0
    for _ in range(40):
        started = time.monotonic()
        urllib.request.urlopen(f"http://127.0.0.1:{port}/serviceorchestration/monitor/echo",
                               timeout=30).read()
        worst = max(worst, time.monotonic() - started)
        time.sleep(0.2)
    stop.set()
    print(f"worst echo latency {worst:.2f} s")


if __name__ == "__main__":
    main()
