"""Registers dual_cases.py as the module ``dual_cases`` (with --import-mode=importlib test modules cannot import
siblings by name)."""

import importlib.util
import pathlib
import sys

_PATH = pathlib.Path(__file__).resolve().parent / "dual_cases.py"
if "dual_cases" not in sys.modules:
    _spec = importlib.util.spec_from_file_location("dual_cases", _PATH)
    _mod = importlib.util.module_from_spec(_spec)
    sys.modules["dual_cases"] = _mod
    _spec.loader.exec_module(_mod)
