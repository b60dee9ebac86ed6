"""Regenerate the admin screenshots of docs/admin.md (`make screenshots`).

Starts the real service (the project's `manage.py runserver`) on a free loopback port over a
throw-away SQLite database seeded by seed.py, logs in to the admin with Debian's headless
Chromium through Selenium, and writes the PNGs next to this file, 1400 px wide. It also fails
when the rule list is wider than 1400 px. Needs `apt-get install chromium chromium-driver`.
"""
import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
WIDTH = 1400
USERNAME, PASSWORD = "plant-admin", "screenshots-only"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until_up(url: str, server: subprocess.Popen) -> None:
    for _ in range(100):
        if server.poll() is not None:
            raise SystemExit("the server stopped")
        try:
            urllib.request.urlopen(url, timeout=1)
            return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"no answer from {url}")


def browser() -> webdriver.Chrome:
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu",
                     "--force-device-scale-factor=1", "--hide-scrollbars",
                     f"--window-size={WIDTH},900", "--lang=en-US"):
        options.add_argument(argument)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


def shoot(driver: webdriver.Chrome, name: str, height: int) -> None:
    """The top of the page, at most `height` px of it (less when the page is shorter)."""
    driver.set_window_size(WIDTH, 2000)
    page, chrome = driver.execute_script(
        "return [document.documentElement.scrollHeight, window.outerHeight - window.innerHeight]")
    driver.set_window_size(WIDTH, min(page, height) + chrome)
    driver.save_screenshot(str(HERE / f"{name}.png"))
    print(f"docs/screenshots/{name}.png")


def ensure_fits(driver: webdriver.Chrome) -> None:
    """Neither the page nor the result table (which scrolls on its own) scrolls sideways."""
    page, table, room = driver.execute_script(
        "const results = document.querySelector('.results');"
        "return [document.documentElement.scrollWidth, results.scrollWidth,"
        " results.clientWidth];")
    if page > WIDTH or table > room:
        columns = driver.execute_script(
            "return [...document.querySelectorAll('#result_list th')].map("
            "th => th.textContent.trim() + ' ' + th.offsetWidth);")
        raise SystemExit(f"{driver.current_url} needs {page} px, its table {table} px of "
                         f"{room}: {', '.join(columns)}")


def fill(driver: webdriver.Chrome, url: str, values: dict[str, str]) -> None:
    driver.get(url)
    for name, value in values.items():
        driver.find_element(By.NAME, name).send_keys(value)


def take(driver: webdriver.Chrome, base: str) -> None:
    fill(driver, f"{base}/admin/login/", {"username": USERNAME, "password": PASSWORD})
    driver.find_element(By.CSS_SELECTOR, "input[type=submit]").click()

    lists = (("store/rule/", "rule-list", 640),
             ("store/rule/?consumer=temperature-consumer", "rule-list-consumer", 520),
             ("orchestration/orchestrationjob/", "jobs", 480),
             ("notifications/notificationdelivery/", "deliveries", 420))
    for path, name, height in lists:
        driver.get(f"{base}/admin/{path}")
        shoot(driver, name, height)
        ensure_fits(driver)

    for instance_id, priority, button, name, height in (
            ("TemperatureProvider|", "0", "_save", "rule-add-error", 520),
            ("SpareTemperatureProvider|temperatureInfo|1.0.0", "4", "_continue",
             "rule-unknown-instance", 640)):
        fill(driver, f"{base}/admin/store/rule/add/", {
            "consumer": "TemperatureConsumer", "service_instance_id": instance_id,
            "priority": priority})
        driver.find_element(By.NAME, button).click()
        shoot(driver, name, height)

    fill(driver, f"{base}/admin/identity/identitytoken/add/", {
        "system_name": "packaging-line-controller", "description": "PLC in hall B"})
    shoot(driver, "token-issue", 560)
    driver.find_element(By.NAME, "_save").click()
    shoot(driver, "token-issued", 420)

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=str(ROOT / ".venv/bin/python"),
                        help="the project's Python (default .venv/bin/python)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="so-screenshots-") as scratch:
        env = {**os.environ, "DATABASE_URL": f"sqlite:///{scratch}/db.sqlite3",
               "STATIC_ROOT": f"{scratch}/static", "SERVE_STATIC": "true", "DEBUG": "false",
               "CELERY_BROKER_URL": "", "SERVICE_REGISTRY_URL": "",
               "METRICS_ENABLED": "false"}
        run = dict(cwd=ROOT, env=env, check=True)
        subprocess.run([args.python, "manage.py", "migrate", "--noinput", "-v", "0"], **run)
        subprocess.run([args.python, "manage.py", "collectstatic", "--noinput", "-v", "0"],
                       **run)
        subprocess.run([args.python, str(HERE / "seed.py"), USERNAME, PASSWORD], **run)
        port = free_port()
        server = subprocess.Popen([args.python, "manage.py", "runserver", "--noreload",
                                   f"127.0.0.1:{port}"], cwd=ROOT, env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            base = f"http://127.0.0.1:{port}"
            wait_until_up(f"{base}/admin/login/", server)
            driver = browser()
            try:
                take(driver, base)
            finally:
                driver.quit()
        finally:
            server.terminate()
            server.wait(timeout=10)


if __name__ == "__main__":
    sys.exit(main())
