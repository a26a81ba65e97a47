"""Experiment tooling: sweeps that produce run directories, and reports that read them.

The report (``rp1 report DIR``) is :func:`rp1.experiments.report.write_report`; it reads only
run directories (``config.json`` + ``metrics.csv``, see DESIGN "Interfaces").
"""
