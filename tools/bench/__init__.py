"""The pieces of tools/bench_runtime.py: documents, real tokenizers, one module per engine,
the harness that times and compares them, and the report."""
