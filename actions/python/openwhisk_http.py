"""HTTP GET from a Python action, through the executor (frozen into the engine).

    import openwhisk_http
    response = openwhisk_http.get("https://example.com/data.json")
    response.status, response.text, response.json()

The executor makes the request under its operator's policy of reachable hosts; the action
needs the annotation `net_access`. A request that cannot be made raises: PermissionError
without `net_access` or to a host the operator does not allow, ConnectionError when the
request fails, ValueError for a body over the executor's limit. Any HTTP status is a response.
"""

import json as _json

import _openwhisk_http

# The executor's result codes (actions/README.md).
_ERRORS = {1: PermissionError, 2: ConnectionError, 3: ValueError}


class Response:
    """A response: `status`, `content` (bytes), `text`, `json()`, `ok`."""

    def __init__(self, url, status, content):
        self.url = url
        self.status = self.status_code = status
        self.content = content

    @property
    def ok(self):
        return 200 <= self.status < 300

    @property
    def text(self):
        return self.content.decode("utf-8", errors="replace")

    def json(self):
        return _json.loads(self.content)

    def __repr__(self):
        return f"<Response [{self.status}]>"


def get(url):
    """GETs `url` (http or https); returns a Response or raises (see the module)."""
    if not isinstance(url, str):
        raise TypeError("the URL must be a str")
    code, status, body = _openwhisk_http.get(url)
    if code != 0:
        raise _ERRORS.get(code, OSError)(body.decode("utf-8", errors="replace"))
    return Response(url, status, body)
