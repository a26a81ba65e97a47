"""Sweeps: many runs of presets × seeds, each one process (``rp1 sweep``, ``rp1 status``).

:func:`rp1.sweep.driver.run_sweep` plans the runs (:mod:`~rp1.sweep.plan`: start, resume or
skip each), hands them to a local pool or a Ray cluster (:mod:`~rp1.sweep.executors`), one run per
worker process (:mod:`~rp1.sweep.worker`), and :mod:`~rp1.sweep.status` reads a sweep's progress
from its run directories alone.
"""
