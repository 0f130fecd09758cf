"""Benchmarks of ssdx's models, each a module run as ``python -m bench.NAME`` from the repository root.

Each writes a JSON record (machine, sizes, compile time apart from run time) under ``bench/results/``
or where ``--json`` says; ``tests/test_bench_*.py`` run them at tiny sizes and import their baselines.
"""
