"""Mutation testing (`make mutation`): developer tooling, never imported by the product
(tests/test_tooling_layout.py).

    python -m tools.mutation [--module PATH ...] [--sample N] [--first TEST_FILE] [--rerun JSON] [--combine JSON ...]

harness.py makes the mutants, selects and runs the tests and scores them; runner.py is the warm pytest
runner of each scratch copy; coverage_contexts.py the pytest plugin of the coverage run that says which
test runs which line. COMPARISON.md measures it against mutmut 3.
"""
