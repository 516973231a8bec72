from __future__ import annotations

import re

from rest_framework.test import APIClient


def test_health_needs_no_key_and_reports_the_database(db):
    response = APIClient().get("/api/v1/health")
    assert response.status_code == 200
    body = response.json()
    assert body["database"] == "ok"
    assert body["embeddings"] in {"not_loaded", "loading", "ready"}
    assert body["version"]


def test_the_schema_documents_the_workspace_api(alice, make_key, api):
    response = api(make_key(alice)).get(
        "/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json"
    )
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    assert "/api/v1/workspaces/{slug}/members/" in schema["paths"]
    assert "bearer" in str(schema["components"]["securitySchemes"]).lower()


def test_the_docs_page_loads_nothing_from_outside(db, client):
    response = client.get("/api/v1/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    sources = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert sources, "the docs page should load its assets"
    assert all(not s.startswith(("http:", "https:", "//")) for s in sources), sources


def test_unknown_api_paths_answer_json_404(db, client):
    response = client.get("/api/v1/no-such-thing")
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"


def test_wrong_method_answers_405_with_a_code(alice, make_key, api):
    response = api(make_key(alice)).put("/api/v1/workspaces/", {}, format="json")
    assert response.status_code == 405
    assert response.json()["code"] == "method_not_allowed"
