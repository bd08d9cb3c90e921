"""Runs pytest and exits with the skip code (argv[1]) only when every test it ran skipped.

pytest exits 0 both when its tests passed and when all of them skipped, so ctest could tell the
two apart only by matching the output, and a pattern such as "[0-9]+ skipped" also matches
"1 failed, 1 skipped": a failure then read as a skip. With this wrapper a failure or an error
keeps pytest's own nonzero code, and the skip code means nothing could run here.

Usage: python pytest_skip_code.py SKIP_CODE PYTEST_ARGS...
"""
import sys

import pytest


class OutcomeCounter:
    """Counts the tests that passed, failed and skipped (setup and teardown errors are failures)."""

    def __init__(self):
        self.passed = self.failed = self.skipped = 0

    def pytest_runtest_logreport(self, report):
        if report.failed:
            self.failed += 1
        elif report.skipped:
            self.skipped += 1
        elif report.passed and report.when == "call":
            self.passed += 1


def main():
    skip_code = int(sys.argv[1])
    counter = OutcomeCounter()
    code = int(pytest.main(sys.argv[2:], plugins=[counter]))
    if code == 0 and counter.skipped > 0 and counter.passed == 0 and counter.failed == 0:
        return skip_code
    return code


if __name__ == "__main__":
    sys.exit(main())
