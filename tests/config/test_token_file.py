"""A bearer token file that is blank or unreadable is a config error naming the key; it
never reads as "no token", which would turn authentication off."""
from __future__ import annotations

import pytest

from faultgate_stream.config import ConfigError, load
from faultgate_stream.model.errors import InputError
from faultgate_stream.receive import security
from faultgate_stream.receive.config import ReceiveConfig


@pytest.mark.parametrize("content", ["", "\n", "   \n\t"])
def test_a_blank_token_file_is_refused_at_load(tmp_path, content):
    token = tmp_path / "token"
    token.write_text(content)
    config = tmp_path / "c.yaml"
    config.write_text(f"receive: {{bearer_token_file: {str(token)!r}}}\n")
    with pytest.raises(ConfigError) as e:
        load(config)
    assert any(p.startswith("receive.bearer_token_file:") and "empty" in p for p in e.value.problems), e.value.problems


def test_a_missing_token_file_is_refused_at_load(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text(f"receive: {{bearer_token_file: {str(tmp_path / 'absent')!r}}}\n")
    with pytest.raises(ConfigError) as e:
        load(config)
    assert any(p.startswith("receive.bearer_token_file: cannot read") for p in e.value.problems), e.value.problems


def test_a_blank_token_file_never_turns_authentication_off_when_built_directly(tmp_path):
    token = tmp_path / "token"
    token.write_text("\n")
    with pytest.raises(InputError, match="receive.bearer_token_file"):
        security.token_of(ReceiveConfig(bearer_token_file=str(token)))


def test_a_token_file_with_a_token_is_read_without_its_newline(tmp_path):
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    config = tmp_path / "c.yaml"
    config.write_text(f"receive: {{bearer_token_file: {str(token)!r}}}\n")
    assert security.token_of(load(config).receive) == "s3cret"
