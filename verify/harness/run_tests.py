"""Runs the harness's unit tests quietly: one summary line, each skipped
test with its reason (unittest names them only in verbose mode), and the
failures' tracebacks. `make test` calls it; exit status 1 on a failure."""

import os
import sys
import unittest


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    suite = unittest.defaultTestLoader.discover(here, pattern="test_*.py")
    with open(os.devnull, "w", encoding="utf-8") as null:
        result = unittest.TextTestRunner(stream=null, verbosity=0).run(suite)
    for test, reason in result.skipped:
        print(f"   skipped {test.id()}: {reason}")
    for test, trace in result.failures + result.errors:
        print(f"FAIL {test.id()}\n{trace}")
    bad = len(result.failures) + len(result.errors)
    print(f"   {result.testsRun} harness tests: {bad} failed, {len(result.skipped)} skipped")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
