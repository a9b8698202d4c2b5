"""The registry names each check once, with the module that implements it (issue 12)."""
from __future__ import annotations

import pytest

from faultgate_stream.checks import registry
from faultgate_stream.checks.base import Check
from faultgate_stream.checks.expectations import Golden
from faultgate_stream.model.errors import InputError


@pytest.mark.parametrize("name", registry.NAMES)
def test_each_registered_name_is_the_name_its_class_declares(name):
    cls = registry.check_class(name)
    assert issubclass(cls, Check)
    assert cls.name == name


def test_the_class_groups_follow_the_names_in_report_column_order():
    assert tuple(c.name for c in registry.ALL) == registry.NAMES
    assert tuple(c.name for c in registry.RULES) == registry.RULE_NAMES == (
        "search_loop", "abstention", "policy", "repeated_call", "unrecovered_tool_error", "context_overflow")
    assert tuple(c.name for c in registry.GOLDEN) == registry.GOLDEN_NAMES == ("wrong_answer", "truncation")
    assert tuple(c.name for c in registry.EXTRA) == registry.EXTRA_NAMES == ("loop",)


def test_default_selection_is_faultgates_columns():
    assert [c.name for c in registry.select()] == list(registry.RULE_NAMES)
    golden = Golden({"p": "a"})
    assert [c.name for c in registry.select(golden=golden)] == [*registry.RULE_NAMES, *registry.GOLDEN_NAMES]


def test_an_unknown_name_is_an_input_error_listing_the_checks():
    with pytest.raises(InputError, match="unknown check 'nope'; available: search_loop"):
        registry.select(["nope"])
    with pytest.raises(AttributeError):
        registry.NOT_A_GROUP  # noqa: B018
