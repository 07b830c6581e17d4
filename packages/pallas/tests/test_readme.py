"""The README's examples run as written."""

import doctest
import pathlib

README = pathlib.Path(__file__).parents[1] / "README.md"


def test_readme_examples():
    result = doctest.testfile(str(README), module_relative=False,
                              optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    assert result.attempted >= 10
    assert result.failed == 0
