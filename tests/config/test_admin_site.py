"""The admin names the product (issue 35): its header, the browser title and the index title
say Service Orchestration, not Django."""
import pytest

pytestmark = pytest.mark.django_db


def test_the_login_page_names_the_product(client):
    html = client.get("/admin/login/").content.decode()
    assert '<div id="site-name"><a href="/admin/">Service Orchestration</a></div>' in html
    assert "<title>Log in | Service Orchestration admin</title>" in html
    assert "Django administration" not in html and "Django site admin" not in html


def test_the_index_names_the_product(admin_client):
    html = admin_client.get("/admin/").content.decode()
    assert '<div id="site-name"><a href="/admin/">Service Orchestration</a></div>' in html
    assert "<title>Service Orchestration administration | Service Orchestration admin</title>" \
        in html
    assert "<h1>Service Orchestration administration</h1>" in html
    assert "Django administration" not in html and "Site administration" not in html
