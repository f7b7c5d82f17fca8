"""The suite's own parallel run keeps each `xdist_group` module on one worker.

Why: with pytest 9.2, pytest-xdist 3.8's `--dist loadgroup` silently stops grouping
(pytest-xdist issue 1386), and each module fixture shared through `xdist_group` (a whole
loop, a browser, a baseline) is built again on every worker: minutes more, and nothing
fails. pyproject.toml keeps pytest below 9.2; this test says so when that no longer holds.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.xdist_group("test_suite_grouping")


def test_loadgroup_keeps_a_grouped_module_on_one_worker(request: pytest.FixtureRequest) -> None:
    if not getattr(request.config.option, "loadgroup", False):  # set on the workers of `--dist loadgroup`
        pytest.skip("runs under `pytest -n N --dist loadgroup`, as .ci/run does")
    assert request.node.nodeid.endswith("@test_suite_grouping"), (
        f"--dist loadgroup does not group under pytest {pytest.__version__}: "
        "install the test extras again, `pip install -e '.[test]'`"
    )
