"""Registers the `stf` marker used by the STF packet tests."""

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "stf: runs p4c STF packet tests through p4kit-stf (the software switch)"
    )
