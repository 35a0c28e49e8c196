"""One rule for every ``ZPI_*`` switch, the plugin controls' and the CLI's own."""

from __future__ import annotations

import pytest

from zpi_host.support.env_flags import env_flag


@pytest.mark.parametrize("value", ["1", "true", "TRUE", " yes ", "On"])
def test_these_turn_a_switch_on(value: str) -> None:
    assert env_flag(value)


@pytest.mark.parametrize("value", [None, "", "0", "false", "no", "off", "2", "enabled"])
def test_anything_else_leaves_it_off(value: str | None) -> None:
    assert not env_flag(value)
