"""Heimdall's own schemathesis check (loaded by scripts/schemathesis.sh).

`error_echoes_no_input`: an error response never repeats a string the
request carried, in its path, query or body. Errors name the field and
what was expected, never what was sent: what was sent may be a value, a
token or a credential that must not reach a log or a screen. (A success
may of course answer with the name it just created.)
"""

import json

import schemathesis

# Shorter strings collide with the words of any message ("id", "dev").
MIN_ECHO_LENGTH = 6


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(key)
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


_VOCABULARY = {}


def _vocabulary(case):
    """The document's own text: an error may say what the document says
    (a field's name, an enum's values, a path's words), and a generated
    string that happens to be one of those is not an echo."""
    schema = case.operation.schema
    key = id(schema)
    if key not in _VOCABULARY:
        _VOCABULARY[key] = json.dumps(schema.raw_schema, ensure_ascii=False)
    return _VOCABULARY[key]


@schemathesis.check
def error_echoes_no_input(ctx, response, case):
    if response.status_code < 400:
        return
    vocabulary = _vocabulary(case)
    sent = []
    for part in (case.path_parameters, case.query, case.body):
        if part is None or not isinstance(part, (str, dict, list, tuple)):
            continue
        sent.extend(_strings(part))
    text = response.text or ""
    try:
        # Compare with the message as decoded, so an escaped echo counts too.
        text = text + "\n" + json.dumps(json.loads(text), ensure_ascii=False)
    except ValueError:
        pass
    for value in sent:
        if len(value) >= MIN_ECHO_LENGTH and value in text and value not in vocabulary:
            raise AssertionError(
                f"the {response.status_code} error repeats a string the request sent ({len(value)} characters)"
            )


@schemathesis.check
def error_code_is_documented(ctx, response, case):
    """An error's stable code is one the document lists for that status of
    that operation (each error response's description names its codes,
    e.g. "`NOT_FOUND`, `FORBIDDEN`"): a client may switch on the codes it
    was told about."""
    if response.status_code < 400:
        return
    try:
        code = json.loads(response.text)["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return  # the body's shape is response_schema_conformance's to judge
    operation = case.operation
    paths = operation.schema.raw_schema.get("paths", {})
    documented = paths.get(operation.path, {}).get(operation.method.lower(), {}).get("responses", {})
    listed = documented.get(str(response.status_code))
    if listed is None:
        return  # an undocumented status is status_code_conformance's to judge
    if f"`{code}`" not in listed.get("description", ""):
        raise AssertionError(
            f"{operation.method.upper()} {operation.path} answered {response.status_code} {code}, "
            f"which its document does not list for that status"
        )
