"""A gate's searches sharded over a Dask cluster: inputs read in partitions by the workers, every
neighbour search split by query and target partition and merged exactly, the metrics' own code
run on the caller over the merged neighbours (docs/cluster.md, "Sharded gate").

Imported on demand only (``import privgate`` never loads it, nor Dask):
:func:`privgate.sharded.evaluate.evaluate_sharded` is the entry point, reached through
``run_gate(..., executor=..., sharded=True)`` and ``privgate gate --executor ... --sharded``."""
