"""docs/results.md and README's "Results at a glance" are the committed reports': made from
their templates (docs/templates/) by ``python docs/tooling/results_page.py``, which reads every
number from a report's files, and checks each verdict the prose states."""

from __future__ import annotations

import re

import pandas as pd
import pytest

import results_page
from helpers import ROOT
from results_page import PAGES, PlaceholderError, Reports, page_text, render
from rp1.report.claims import CLAIM_COLUMNS

COMMAND = "PYTHONPATH=src python docs/tooling/results_page.py"


@pytest.mark.parametrize("page", PAGES, ids=[page.target for page in PAGES])
def test_the_page_is_what_its_template_and_the_committed_reports_give(page):
    made = page_text(page, ROOT, Reports(ROOT))
    assert (ROOT / page.target).read_text(encoding="utf-8") == made, (
        f"{page.target} is not what {page.template} and the committed reports give: run {COMMAND}"
    )


OWN_NUMBER = re.compile(r"(?<!λ = )\d[\d,]*\.\d")
"""A decimal number: what a template must not type itself (counts, seeds and sizes it may, and a
method's λ: ``λ = 0.5`` names the method of that fixed λ)."""


def typed_text(template: str) -> str:
    """A template's own words: without its placeholders, code blocks, code spans and comments."""
    text = re.sub(r"```.*?```", "", template, flags=re.DOTALL)
    text = re.sub(r"<!--.*?-->", "", text, flags=re.DOTALL)
    text = results_page.PLACEHOLDER.sub("", text)
    return re.sub(r"`[^`]*`", "", text)


@pytest.mark.parametrize("page", PAGES, ids=[page.template for page in PAGES])
def test_a_template_types_no_number_of_a_report(page):
    text = typed_text((ROOT / page.template).read_text(encoding="utf-8"))
    assert OWN_NUMBER.findall(text) == []


def test_the_results_page_is_shorter_than_it_was():
    assert len((ROOT / "docs" / "results.md").read_text(encoding="utf-8").splitlines()) < 480


CLAIM = {
    "claim": "RP1 beats Greedy (Table 1)",
    "id": "rp1-vs-greedy",
    "table": "table1",
    "comparison": "T1",
    "task": "hopper",
    "scale": "small",
    "samples": 10_000,
    "method_a": "rp1",
    "method_b": "greedy",
    "n_a": 10,
    "n_b": 10,
    "median_a": 299.1,
    "median_b": -64.3,
    "diff": 243.2,
    "diff_low": 157.5,
    "diff_high": 320.0,
    "p_holm": 0.00035,
    "gain_p_a": 0.31,
    "gain_b": -224.2,
    "learned": True,
    "robust_to_realisation": "",
    "mixed_cells": "",
}


def fake_repository(tmp_path, *verdicts: tuple[str, str]) -> Reports:
    """A checkout whose laptop-scale report has a claim per (measure, verdict), RP1 against Greedy
    on Hopper at 10⁴, and a learning.csv."""
    report = tmp_path / "docs" / "laptop-scale"
    report.mkdir(parents=True)
    rows = [{**CLAIM, "metric": metric, "verdict": verdict} for metric, verdict in verdicts]
    pd.DataFrame(rows).reindex(columns=list(CLAIM_COLUMNS)).to_csv(
        report / "claims.csv", index=False
    )
    pd.DataFrame(
        {
            "task": ["hopper", "ant"],
            "scale": "small",
            "samples": 10_000,
            "untrained": [171.57, 99.5],
        }
    ).to_csv(report / "learning.csv", index=False)
    return Reports(tmp_path)


FELL = "holds, but only because Greedy fell below its untrained policy"


def test_a_claim_placeholder_writes_the_reports_verdict_and_checks_the_prose(tmp_path):
    reports = fake_repository(tmp_path, ("return_at", FELL), ("auc", "inconclusive: too few seeds"))
    claim = "claim laptop-scale rp1-vs-greedy hopper 10000 return_at"
    assert render(f"{{{{{claim}}}}}", reports) == (
        "**holds** Δ 243.2 [157.5, 320.0], p_H = 0.00035; but only because Greedy fell below its "
        "untrained policy"
    )
    assert render(f"{{{{{claim} brief}}}}", reports) == (
        "holds, Δ 243 [158, 320] (Greedy fell below its untrained policy)"
    )
    assert render(f"A {{{{{claim} medians expect=holds-but}}}} B", reports) == "A 299.1 vs −64.3 B"
    assert render(f"{{{{{claim} gain_p_a}}}}, {{{{{claim} gain_b}}}}", reports) == "0.31, −224.2"
    assert render(f"x{{{{{claim} check robust=}}}}y", reports) == "xy"
    with pytest.raises(PlaceholderError, match="the page expects holds: rewrite the prose"):
        render(f"line\n{{{{{claim} kind expect=holds}}}}", reports, "page.md")
    with pytest.raises(PlaceholderError, match=r"^page.md:1: .*robust_to_realisation is ''"):
        render(f"{{{{{claim} check robust=no}}}}", reports, "page.md")
    with pytest.raises(PlaceholderError, match="no verdict for rp1-vs-greedy ant 10000 return_at"):
        render("{{claim laptop-scale rp1-vs-greedy ant 10000 return_at}}", reports)
    with pytest.raises(PlaceholderError, match="no report 'laptop'"):
        render("{{claim laptop rp1-vs-greedy hopper 10000 return_at}}", reports)
    with pytest.raises(PlaceholderError, match="no directive 'claims'"):
        render("{{claims laptop-scale}}", reports)


def test_a_replication_reads_each_claim_against_the_fresh_seeds_verdict(tmp_path):
    """The original (laptop-scale here) and its replication (controls here, any committed
    report's name): a holds replicated, one not replicated, one reversed, and no claim."""
    reports = fake_repository(
        tmp_path,
        ("return_at", "holds"),
        ("paper_best", FELL),
        ("grid_best", "holds"),
        ("auc", "inconclusive: too few seeds"),
    )
    fresh = {"return_at": "holds", "paper_best": "equivalent", "grid_best": "does not hold"}
    fresh["auc"] = "holds"
    rows = [{**CLAIM, "metric": m, "verdict": v, "diff": -5.0} for m, v in fresh.items()]
    (tmp_path / "docs" / "controls").mkdir()
    pd.DataFrame(rows).reindex(columns=list(CLAIM_COLUMNS)).to_csv(
        tmp_path / "docs" / "controls" / "claims.csv", index=False
    )
    table = render("{{replication laptop-scale controls 10000 rp1-vs-greedy}}", reports)
    lines = table.splitlines()
    assert lines[0] == "| claim | task | measure | laptop-scale | controls | reading | p, one Δ |"
    readings = [line.split("|")[-3].strip() for line in lines[2:]]
    assert readings == ["replicated", "not replicated", "reversed", "no claim"]
    assert "| holds, Δ 243 [158, 320] | holds, Δ −5 [158, 320] |" in lines[2]
    # an undecided verdict shows the difference its data allow, as a decided one does
    assert "| inconclusive, Δ 243 [158, 320] | holds, Δ −5 [158, 320] | no claim |" in lines[5]
    with pytest.raises(PlaceholderError, match="no verdict of rp1-vs-vr at 10000"):
        render("{{replication laptop-scale controls 10000 rp1-vs-vr}}", reports)
    with pytest.raises(PlaceholderError, match="replication needs ORIGINAL REPLICATION"):
        render("{{replication laptop-scale 10000 rp1-vs-greedy}}", reports)


def test_a_matrix_has_a_row_per_claim_and_task_and_labels_the_papers_metric(tmp_path):
    reports = fake_repository(tmp_path, ("paper_best", "holds"), ("return_at", FELL))
    table = render("{{matrix laptop-scale 10000 rp1-vs-greedy}}", reports).splitlines()
    assert table[0] == (
        "| claim | task | seeds | paper's best (the paper's metric) | return at N |"
    )
    assert table[2].startswith(
        "| RP1 beats Greedy (Table 1) | hopper | 10 vs 10 | **holds** Δ 243.2"
    )
    with pytest.raises(PlaceholderError, match="no verdict at 10000 for rp1-vs-vr"):
        render("{{matrix laptop-scale 10000 rp1-vs-greedy,rp1-vs-vr}}", reports)


def test_a_value_placeholder_reads_one_row_or_aggregates(tmp_path):
    reports = fake_repository(tmp_path, ("return_at", FELL))
    value = "value laptop-scale learning.csv"
    assert render(f"{{{{{value} task=hopper untrained}}}}", reports) == "171.6"
    assert render(f"{{{{{value} task=hopper untrained fmt=.2f}}}}", reports) == "171.57"
    assert render(f"{{{{{value} task^=hop samples agg=count}}}}", reports) == "1"
    assert render(f"{{{{{value} untrained agg=max}}}}", reports) == "171.6"
    with pytest.raises(PlaceholderError, match="2 rows"):
        render(f"{{{{{value} untrained}}}}", reports)
    with pytest.raises(PlaceholderError, match="no column 'gain'"):
        render(f"{{{{{value} task=hopper gain}}}}", reports)


def test_the_command_replaces_a_marked_part_and_check_says_what_differs(
    tmp_path, capsys, monkeypatch
):
    fake_repository(tmp_path, ("return_at", FELL))
    (tmp_path / "docs" / "templates").mkdir()
    (tmp_path / "docs" / "templates" / "part.md").write_text(
        "Hopper: {{claim laptop-scale rp1-vs-greedy hopper 10000 return_at kind}}.\n"
    )
    (tmp_path / "README.md").write_text("# x\n<!-- part -->\nold\n<!-- /part -->\nend\n")
    page = results_page.Page("docs/templates/part.md", "README.md", "part")
    monkeypatch.setattr(results_page, "PAGES", (page,))
    repository = ["--repository", str(tmp_path)]
    assert results_page.main([*repository, "--check"]) == 1
    assert capsys.readouterr().out == "not what the reports give: README.md\n"
    assert results_page.main(repository) == 0
    assert (tmp_path / "README.md").read_text() == (
        "# x\n<!-- part -->\nHopper: holds.\n<!-- /part -->\nend\n"
    )
    assert results_page.main([*repository, "--check"]) == 0
    (tmp_path / "docs" / "templates" / "part.md").write_text(
        "{{claim laptop-scale rp1-vs-greedy hopper 10000 return_at kind expect=inconclusive}}\n"
    )
    assert results_page.main(repository) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith("results_page: error: docs/templates/part.md:1: ") and err.count("\n") == 1
    )


@pytest.mark.slow
def test_remake_makes_the_reports_again_from_their_runs_then_the_pages(tmp_path, monkeypatch):
    from report_runs import two_method_runs

    two_method_runs(tmp_path / "runs", "hopper", {"rp1": [300.0, 280.0, 310.0]}, 0.0)
    two_method_runs(tmp_path / "runs", "hopper", {"greedy": [0.0, 20.0, -5.0]}, 0.0)
    (tmp_path / "docs" / "templates").mkdir(parents=True)
    (tmp_path / "docs" / "templates" / "page.md").write_text(
        "{{claim laptop-scale rp1-vs-greedy hopper 10000 return_at brief expect=holds}}\n"
    )
    (tmp_path / "docs" / "page.md").write_text("")
    monkeypatch.setattr(results_page, "REPORTS", {"laptop-scale": "runs"})
    monkeypatch.setattr(
        results_page, "PAGES", (results_page.Page("docs/templates/page.md", "docs/page.md"),)
    )
    assert results_page.main(["--repository", str(tmp_path), "--remake"]) == 0
    assert (tmp_path / "docs" / "laptop-scale" / "provenance.md").is_file()
    assert (tmp_path / "docs" / "page.md").read_text().startswith("holds, Δ 292 [")  # 296.7 − 5.0


def table1_cell(method: str, samples: int, median: float, **extra) -> dict:
    """A row of a report's table1.csv or table1_fair.csv: HalfCheetah at small scale, 10 seeds,
    quartiles 10 either side of the median."""
    return {
        "task": "halfcheetah",
        "scale": "small",
        "samples": samples,
        "method": method,
        "n_seeds": 10,
        "median": median,
        "q25": median - 10,
        "q75": median + 10,
        **extra,
    }


def test_a_returns_table_has_the_return_at_n_and_the_papers_best_beside_the_papers(tmp_path):
    reports = fake_repository(tmp_path, ("return_at", FELL))
    report = tmp_path / "docs" / "laptop-scale"
    pd.DataFrame(
        [
            table1_cell("greedy", 10_000, -0.07, paper_median=-0.95),
            table1_cell("rp1", 10_000, 70.93, paper_median=100.51),
            table1_cell("rp1", 100_000, 279.8, paper_median=float("nan")),
        ]
    ).to_csv(report / "table1.csv", index=False)
    pd.DataFrame(
        [
            table1_cell("greedy", 10_000, -0.83, metric="return_at"),
            table1_cell("greedy", 10_000, 5.0, metric="grid_best"),
            table1_cell("rp1", 10_000, 26.04, metric="return_at"),
            table1_cell("rp1", 100_000, 251.9, metric="return_at"),
        ]
    ).to_csv(report / "table1_fair.csv", index=False)
    table = render("{{returns laptop-scale 10000 laptop-scale 100000}}", reports).splitlines()
    assert table == [
        "| task | N | seeds | Greedy | RP1 |",
        "| --- | --- | --- | --- | --- |",
        (
            "| halfcheetah | 10,000 | 10 | −0.8 [−10.8, 9.2] · −0.1 [−10.1, 9.9] (paper −0.95) "
            "| 26.0 [16.0, 36.0] · 70.9 [60.9, 80.9] (paper 100.51) |"
        ),
        "| halfcheetah | 100,000 | 10 | — | 251.9 [241.9, 261.9] · 279.8 [269.8, 289.8] |",
    ]
    only = render("{{returns laptop-scale 100000 methods=rp1}}", reports).splitlines()
    assert only[0] == "| task | N | seeds | RP1 |"
    with pytest.raises(PlaceholderError, match="no returns of vr"):
        render("{{returns laptop-scale 10000 methods=rp1,vr}}", reports)
    with pytest.raises(PlaceholderError, match="no returns at 1000"):
        render("{{returns laptop-scale 1000}}", reports)
    with pytest.raises(PlaceholderError, match="returns needs REPORT SAMPLES"):
        render("{{returns laptop-scale}}", reports)


def test_a_claim_placeholder_says_and_checks_whether_one_seed_moves_a_verdict(tmp_path):
    reports = fake_repository(tmp_path, ("return_at", "holds"), ("auc", "holds"))
    claims = tmp_path / "docs" / "laptop-scale" / "claims.csv"
    table = pd.read_csv(claims)
    table["fragile_without"] = ["3 8" if metric == "auc" else "" for metric in table["metric"]]
    table.to_csv(claims, index=False)
    reports = Reports(tmp_path)
    firm = "claim laptop-scale rp1-vs-greedy hopper 10000 return_at"
    fragile = "claim laptop-scale rp1-vs-greedy hopper 10000 auc"
    assert render(f"{{{{{firm} firmness firm=yes}}}}", reports) == "no single seed moves it"
    assert render(f"{{{{{fragile} firmness firm=no}}}}", reports) == "it moves without seeds 3, 8"
    assert render(f"{{{{{fragile}}}}}", reports).endswith("; moves without seeds 3, 8")
    with pytest.raises(
        PlaceholderError, match="it moves without seeds 3, 8, the page expects firm=yes"
    ):
        render(f"{{{{{fragile} check firm=yes}}}}", reports)
    with pytest.raises(PlaceholderError, match="no single seed moves it, the page expects firm=no"):
        render(f"{{{{{firm} check firm=no}}}}", reports)
    with pytest.raises(PlaceholderError, match="firm= takes yes or no"):
        render(f"{{{{{firm} check firm=maybe}}}}", reports)
