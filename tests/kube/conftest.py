"""The chart tests' one release, installed once for every module here that asks for it
(``release``): installing it (stores, migrations, every pod starting on two cores) takes
longer than most of the tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.kube.release import Release, installed


@pytest.fixture(scope="package")
def release(tmp_path_factory: pytest.TempPathFactory,
            pytestconfig: pytest.Config) -> Iterator[Release]:
    yield from installed(tmp_path_factory, pytestconfig)
