"""Tokens and values never show in a repr(), a str(), an exception or a
traceback."""

from __future__ import annotations

import pickle
import traceback

import pytest

import heimdall
from conftest import DB_VALUE, World


def test_clients_never_show_their_token(world: World) -> None:
    dev = world.dev
    token = dev.owner_token
    assert token.startswith("hmd_")
    shown = [
        repr(heimdall.Client(dev.url, token, ca_file=dev.ca_file)),
        str(heimdall.Client(dev.url, token, ca_file=dev.ca_file)),
        repr(dev.client()),
        repr(heimdall.AsyncClient(dev.url, token, ca_file=dev.ca_file)),
        repr(heimdall.load_profile(config_dir=dev.config_dir)),
        repr(heimdall.AgentClient.with_program_token(dev.agent_url, world.reader_token, ca_file=dev.ca_file)),
        repr(heimdall.AsyncAgentClient.with_program_token(dev.agent_url, world.reader_token, ca_file=dev.ca_file)),
    ]
    for text in shown:
        assert token not in text and world.reader_token not in text, text
        assert "<redacted>" in text, text
    assert repr(dev.client()) == f"Client(url=\"{dev.url}/\", token=<redacted>)"


def test_errors_and_tracebacks_never_show_a_token(world: World) -> None:
    dev = world.dev
    wrong = "hmd_" + "x" * 40
    client = heimdall.Client(dev.url, wrong, ca_file=dev.ca_file)
    with pytest.raises(heimdall.HeimdallError) as caught:
        client.whoami()
    err = caught.value
    assert err.code == "UNAUTHENTICATED"
    text = "".join(traceback.format_exception(err)) + repr(err) + str(err) + repr(err.args)
    assert wrong not in text, text
    # Still an error after a round trip through pickle, still without it.
    again = pickle.loads(pickle.dumps(err))
    assert (again.code, again.message, again.kind) == (err.code, err.message, err.kind)

    with pytest.raises(heimdall.HeimdallError) as caught:
        heimdall.Client(dev.url, "hmd_bad\ntoken")
    assert "hmd_bad" not in str(caught.value) + repr(caught.value)

    agent = heimdall.AgentClient.with_program_token(dev.agent_url, world.reader_token, ca_file=dev.ca_file)
    with pytest.raises(heimdall.HeimdallError) as caught:
        agent.get_value("db-never", environment="dev")
    text = "".join(traceback.format_exception(caught.value))
    assert world.reader_token not in text and caught.value.code == "NOT_FOUND"


def test_a_value_shows_only_through_reveal(world: World) -> None:
    dev = world.dev
    agent = heimdall.AgentClient.with_program_token(dev.agent_url, world.reader_token, ca_file=dev.ca_file)
    value = agent.get_value("db-password", environment="dev")
    for text in (repr(value), str(value), f"{value}", f"{value!r}", repr([value]), repr({"v": value})):
        assert "s3cret" not in text and DB_VALUE not in text, text
        assert "<redacted>" in text
    assert repr(value) == 'SecretValue(name="db-password", environment="dev", version=1, value=<redacted>)'
    assert not hasattr(value, "__dict__") and not hasattr(value, "value")
    with pytest.raises(TypeError):
        pickle.dumps(value)
    assert value.reveal() == DB_VALUE

    # A value in a frame's locals is not in the traceback either.
    def fails(v: heimdall.SecretValue) -> None:
        raise RuntimeError(f"could not use {v}")

    with pytest.raises(RuntimeError) as caught:
        fails(value)
    rendered = "".join(traceback.TracebackException.from_exception(caught.value, capture_locals=True).format())
    assert "s3cret" not in rendered, rendered
