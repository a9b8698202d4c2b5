"""The config file: validated whole at start, every problem named with its path."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from faultgate_stream.config import ConfigError, load

CASES = yaml.safe_load((Path(__file__).parent / "invalid_configs.yaml").read_text())


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_bad_config_is_refused_with_a_message_naming_the_key(tmp_path, name):
    f = tmp_path / "c.yaml"
    f.write_text(yaml.safe_dump(CASES[name]["config"]))
    with pytest.raises(ConfigError) as e:
        load(f)
    assert any(CASES[name]["expect"] in p for p in e.value.problems), e.value.problems


def test_every_problem_is_reported_at_once(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("assemble: {root_grace: soon, max_traces: 0}\nreceive: {bogus: 1}\n")
    with pytest.raises(ConfigError) as e:
        load(f)
    assert len(e.value.problems) == 3


def test_units_and_environment_overrides_are_read(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("assemble: {root_grace: 500ms, max_run_duration: 10m, max_bytes: 1GiB}\n"
                 "checks: {enabled: [policy]}\n")
    cfg = load(f, {"FAULTGATE_STREAM__ASSEMBLE__ROOT_GRACE": "5s", "FAULTGATE_STREAM__METRICS__MAX_AGENTS": "7",
                   "UNRELATED": "x"})
    assert cfg.assemble.root_grace == 5.0 and cfg.assemble.max_run_duration == 600.0
    assert cfg.assemble.max_bytes == 1024**3 and cfg.metrics.max_agents == 7
    assert cfg.checks.enabled == ("policy",)


def test_an_unreadable_or_non_yaml_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        load(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("assemble: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load(bad)


def test_the_example_config_loads_and_equals_the_defaults_it_documents():
    from faultgate_stream.config import ServiceConfig

    root = Path(__file__).resolve().parents[2]
    assert load(root / "examples" / "config.yaml") == ServiceConfig()
