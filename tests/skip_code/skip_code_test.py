"""Proves the skip mechanism (skip_code.cmake) reports a planted failure as failed.

Configures, builds and runs the planted project (planted/) in a temporary folder with the real
gtest main and pytest wrapper, then checks what ctest reported for each entry: a failure beside
skips is Failed, all skips is Skipped, a pass beside skips is Passed. It needs no GPU: the
planted "rows" skip as CUDA rows do without a device.

Usage: python skip_code_test.py CMAKE CTEST
"""
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

EXPECTED = {
    "gtest_fail_beside_skip": "Failed",
    "gtest_all_skip": "Skipped",
    "gtest_pass_beside_skip": "Passed",
    "each.Rows.Passes": "Passed",
    "each.Rows.Fails": "Failed",
    "each.Rows.Skips": "Skipped",
    "each.Rows.SkipsToo": "Skipped",
    "pytest_fail_beside_skip": "Failed",
    "pytest_all_skip": "Skipped",
    "pytest_pass_beside_skip": "Passed",
    "pytest_error_beside_skip": "Failed",
}


def run(command, cwd):
    return subprocess.run(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def reported_outcomes(ctest_output):
    """ctest's verdict per entry, from lines like `1/11 Test  #1: name ....***Failed  0.01 sec`."""
    outcomes = {}
    for match in re.finditer(r"Test\s+#\d+: (\S+) \.+\s*(?:\*\*\*)?(Passed|Failed|Skipped|Not Run)", ctest_output):
        outcomes[match.group(1)] = match.group(2)
    return outcomes


def main():
    cmake, ctest = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory(prefix="lumen-skip-code-") as build:
        configure = run([cmake, "-S", os.path.join(HERE, "planted"), "-B", build, f"-DLUMEN_SKIP_CODE_DIR={HERE}",
                         f"-DPLANTED_PYTHON={sys.executable}"], cwd=build)
        if configure.returncode != 0:
            print(configure.stdout)
            return 1
        compile_ = run([cmake, "--build", build, "-j1"], cwd=build)
        if compile_.returncode != 0:
            print(compile_.stdout)
            return 1
        tested = run([ctest, "--test-dir", build], cwd=build)
    outcomes = reported_outcomes(tested.stdout)
    wrong = {name: (want, outcomes.get(name)) for name, want in EXPECTED.items() if outcomes.get(name) != want}
    if wrong or tested.returncode == 0:
        print(tested.stdout)
        for name, (want, got) in sorted(wrong.items()):
            print(f"{name}: expected {want}, ctest reported {got}")
        return 1
    print(f"all {len(EXPECTED)} planted entries reported as expected (failures as Failed, all-skipped as Skipped)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
