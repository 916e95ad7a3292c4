"""Registers the tests' independent reference (reference.py) as the module ``dtypes_reference``: with
``--import-mode=importlib`` test modules cannot import their siblings by name."""

import importlib.util
import pathlib
import sys

_spec = importlib.util.spec_from_file_location("dtypes_reference", pathlib.Path(__file__).with_name("reference.py"))
_module = importlib.util.module_from_spec(_spec)
sys.modules["dtypes_reference"] = _module
_spec.loader.exec_module(_module)
