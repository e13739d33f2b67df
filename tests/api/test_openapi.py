"""The OpenAPI document is enough for a client: every operation documents its errors, lists document paging."""
import pytest

from api.pagination import MAX_PAGE_SIZE


@pytest.fixture
def openapi(client):
    response = client.get("/api/v1/openapi.json")
    assert response.status_code == 200
    return response.json()


def operations(openapi):
    for path, methods in openapi["paths"].items():
        for method, operation in methods.items():
            yield path, method, operation


def test_every_operation_documents_its_errors_in_the_one_shape(openapi):
    for path, method, operation in operations(openapi):
        responses = operation["responses"]
        for code in ("400", "422", "429"):
            assert code in responses, f"{method} {path} lacks {code}"
        for code, spec in responses.items():
            if code.startswith("4"):
                schema = spec["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/ErrorOut"}, f"{method} {path} {code}"


#: Operations on the token user's own things (outbound webhooks): every one needs a token, reads too.
PRIVATE = "/api/v1/webhooks/"


def content_operations(openapi):
    return [(p, m, o) for p, m, o in operations(openapi) if not p.startswith(PRIVATE)]


def test_writes_require_a_token_and_reads_make_it_optional(openapi):
    for path, method, operation in content_operations(openapi):
        if method == "get":
            assert operation["security"] == [{"TokenAuth": []}, {}], path
        else:
            assert operation["security"] == [{"TokenAuth": []}], path
            assert {"401", "403"} <= set(operation["responses"]), path


def test_lists_document_cursor_paging_and_the_maximum_page_size(openapi):
    lists = [(p, o) for p, m, o in content_operations(openapi) if m == "get" and p.endswith("/")]
    assert len(lists) == 8
    for path, operation in lists:
        params = {param["name"]: param for param in operation["parameters"]}
        assert {"cursor", "limit", "updated_since"} <= set(params), path
        assert params["limit"]["schema"]["maximum"] == MAX_PAGE_SIZE
        assert "304" not in operation["responses"]


def test_details_document_304(openapi):
    details = [p for p, m, o in content_operations(openapi) if m == "get" and not p.endswith("/")]
    assert len(details) == 3
    for path in details:
        assert "304" in openapi["paths"][path]["get"]["responses"]


def test_webhook_operations_all_require_a_token(openapi):
    private = [(p, m, o) for p, m, o in operations(openapi) if p.startswith(PRIVATE)]
    assert len(private) == 7
    for path, method, operation in private:
        assert operation["security"] == [{"TokenAuth": []}], (method, path)
        assert {"401", "403"} <= set(operation["responses"]), (method, path)


def test_interactive_docs_are_served(client):
    response = client.get("/api/v1/docs")
    assert response.status_code == 200
    assert b"openapi.json" in response.content
