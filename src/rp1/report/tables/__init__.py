"""The paper's tables: each declared once (:mod:`~rp1.report.tables.specs`, ``TABLES``) and made
by one module per job, each importing only those before it: the per-seed values and each cell's
statistics (:mod:`~rp1.report.tables.cells`), the comparisons and their verdicts
(:mod:`~rp1.report.tables.ttests`), a table's results from runs (:mod:`~rp1.report.tables.results`),
its Markdown (:mod:`~rp1.report.tables.markdown`) and its files (:mod:`~rp1.report.tables.files`).
"""
