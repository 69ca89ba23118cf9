"""README.md's Python blocks run as written, on the tests' cluster (``sc`` is its SparkContext)."""

import os
import re

from conftest import ROOT


def python_blocks():
    with open(os.path.join(ROOT, "README.md")) as f:
        return re.findall(r"(?ms)^```python\n(.*?)^```", f.read())


def test_readme_has_python_blocks():
    assert python_blocks(), "README.md has no python block: is the path right?"


def test_every_python_block_of_the_readme_runs(spark):
    for code in python_blocks():
        namespace = {"sc": spark.sparkContext, "spark": spark}
        exec(compile(code, "README.md python block", "exec"), namespace)
