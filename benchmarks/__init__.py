"""asv benchmark suite of npu-emu (configuration: asv.conf.json at the repository root;
docs/contributing/numba_rules.md §6)."""
