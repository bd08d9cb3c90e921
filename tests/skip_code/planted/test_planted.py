"""Planted pytest outcomes; PLANTED picks which mix this run has."""
import os

import pytest

VARIANT = os.environ.get("PLANTED", "")


@pytest.fixture
def broken_fixture():
    raise RuntimeError("the planted setup error")


def test_first():
    if VARIANT == "fail_beside_skip":
        assert False, "the planted failure"
    if VARIANT == "all_skip":
        pytest.skip("no Chromium")


@pytest.mark.skipif(VARIANT != "error_beside_skip", reason="only in the error variant")
def test_error(broken_fixture):
    pass


def test_second():
    pytest.skip("no haproxy")
