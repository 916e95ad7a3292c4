"""asv benchmark suite of npu-emu (configuration: asv.conf.json at the repository root; spec numba_rules.md §6)."""
