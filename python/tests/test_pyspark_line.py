"""The package says when the PySpark beside it is of a line the jar is not built for."""

import warnings

import pytest

from gpucoll import _pyspark_line


@pytest.mark.parametrize("version", ["3.5.8", "4.0.4", "4.1.3", "4.2.0", "4.2.1.dev0"])
def test_a_supported_line_is_quiet(version):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _pyspark_line.check(version)


@pytest.mark.parametrize("version", ["4.3.0", "3.4.4", "5.0.0"])
def test_another_line_is_named_with_the_supported_ones(version):
    with pytest.warns(UserWarning) as caught:
        assert not _pyspark_line.check(version)
    message = str(caught[0].message)
    assert "PySpark " + version in message and "3.5, 4.0, 4.1, 4.2" in message and "gpucoll[spark]" in message


def test_the_installed_pyspark_is_the_one_checked():
    import pyspark
    assert _pyspark_line.installed_pyspark() == pyspark.__version__
