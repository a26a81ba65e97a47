"""Reports made from run directories alone (``config.json``, ``metrics.csv``,
``evaluations.csv``; see DESIGN "Interfaces"): ``rp1 report DIR`` is
:func:`rp1.report.write.write_report`, and ``rp1 train``'s end-of-run summary is
:func:`rp1.report.run_summary.run_summary`. Nothing here imports JAX.
"""
