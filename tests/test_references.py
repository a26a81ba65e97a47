"""A preset ships its reference seeds, and a run says where it stands among them: in
``rp1 train``'s last lines and as a band behind its learning curve."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from matplotlib.figure import Figure

from helpers import run_cli_output, train_args
from report_runs import write_grid, write_run
from rp1.report import references
from rp1.report.references import (
    make_reference,
    read_reference,
    reference_for,
    reference_json,
    standing,
)
from rp1.report.run_curve import draw_reference, write_learning_curve
from rp1.report.run_summary import run_summary
from rp1.rundir.files import CURVE

BEST = [10.0, 40.0, 20.0, 30.0]
"""The four reference runs' trained evaluation returns (the last one in force at 10⁴)."""


def reference_runs(root):
    """Four hopper-quick runs (seeds 0-3) of budget 10⁴: an untrained evaluation of 0, then a
    trained one at 5,000 samples returning BEST[seed], and a grid every 5,000 samples."""
    for seed, value in enumerate(BEST):
        run = write_run(
            root,
            "hopper",
            "quick",
            seed,
            [0, 5_000],
            [0.0, value],
            budget=10_000,
            phase=5_000,
            scale="small",
        )
        write_grid(run, 5_000, [0.0, value])


def test_a_reference_holds_each_seeds_best_and_final_return_and_the_quartiles_of_the_grid(
    tmp_path,
):
    reference_runs(tmp_path)
    reference = make_reference(tmp_path, "hopper-quick", "tests")
    assert (reference.preset, reference.scale, reference.budget) == (
        "hopper-quick",
        "small",
        10_000,
    )
    assert reference.seeds == (0, 1, 2, 3)
    assert list(reference.best) == BEST and list(reference.final) == BEST
    band = reference.band.set_index("samples")
    assert list(band.index) == [5_000, 10_000]
    assert band.loc[5_000, "median"] == 0.0
    q25, median, q75 = np.quantile(BEST, [0.25, 0.5, 0.75])
    assert (band.loc[10_000, "q25"], band.loc[10_000, "median"], band.loc[10_000, "q75"]) == (
        q25,
        median,
        q75,
    )
    with pytest.raises(ValueError, match="holds no run of ant-quick"):
        make_reference(tmp_path, "ant-quick", "tests")


def test_a_reference_is_read_back_checked(tmp_path):
    reference_runs(tmp_path / "runs")
    data = reference_json(make_reference(tmp_path / "runs", "hopper-quick", "tests"))
    path = tmp_path / "hopper-quick.json"
    path.write_text(json.dumps(data))
    again = read_reference(path)
    assert again.seeds == (0, 1, 2, 3) and list(again.best) == BEST
    assert again.band.equals(make_reference(tmp_path / "runs", "hopper-quick", "tests").band)
    for damage in ({"best": BEST[:3]}, {"final": [1.0, 2.0, 3.0, float("nan")]}, {"seeds": []}):
        path.write_text(json.dumps({**data, **damage}))
        with pytest.raises(ValueError, match=f"reference {path} is damaged"):
            read_reference(path)
    path.write_text(json.dumps({k: v for k, v in data.items() if k != "band"}))
    with pytest.raises(ValueError, match=f"reference {path} is not readable"):
        read_reference(path)


def test_a_run_is_compared_only_with_the_reference_of_its_preset_scale_and_budget(tmp_path):
    reference_runs(tmp_path / "runs")
    data = reference_json(make_reference(tmp_path / "runs", "hopper-quick", "tests"))
    (tmp_path / "hopper-quick-10000.json").write_text(json.dumps(data))
    (tmp_path / "hopper-quick-20000.json").write_text(json.dumps({**data, "seeds": [5, 6, 7, 8]}))
    config = {"preset": "hopper-quick", "scale": "small", "budget": 10_000}
    assert reference_for(config, tmp_path).seeds == (0, 1, 2, 3)
    assert reference_for({**config, "budget": 20_000}, tmp_path) is None  # made at 10⁴ inside
    (tmp_path / "hopper-quick-20000.json").write_text(
        json.dumps({**data, "budget": 20_000, "seeds": [5, 6, 7, 8]})
    )
    assert reference_for({**config, "budget": 20_000}, tmp_path).seeds == (5, 6, 7, 8)
    assert reference_for({**config, "budget": 5_000}, tmp_path) is None
    assert reference_for({**config, "scale": "paper"}, tmp_path) is None
    assert reference_for({**config, "preset": "ant-quick"}, tmp_path) is None
    assert reference_for({**config, "preset": "../hopper-quick"}, tmp_path) is None


def test_standing_names_the_quartile_a_value_falls_beside():
    values = np.array([10.0, 20.0, 30.0, 40.0])
    assert standing(5.0, values) == "below every one of them (lowest 10.0)"
    assert standing(12.0, values) == "below their 25th percentile (17.5)"
    assert standing(20.0, values).startswith("below their median (25.0), within their middle half")
    assert standing(25.0, values).startswith("at or above their median (25.0)")
    assert standing(35.0, values) == "above their 75th percentile (32.5)"
    assert standing(41.0, values) == "above every one of them (highest 40.0)"


def tiny_reference(directory, finished_run, best, final) -> None:
    """A reference in ``directory`` for the tiny run ``finished_run``'s preset, scale and budget,
    with three seeds of ``best`` and ``final`` returns."""
    config = json.loads((finished_run / "config.json").read_text())
    data = {
        "preset": config["preset"],
        "scale": config["scale"],
        "budget": config["budget"],
        "source": "a tiny test reference",
        "seeds": [0, 1, 2],
        "best": best,
        "final": final,
        "band": {"samples": [900, 1800], "q25": [0, 1], "median": [1, 2], "q75": [2, 3]},
    }
    directory.mkdir(exist_ok=True)
    (directory / f"{config['preset']}-{config['budget']}.json").write_text(json.dumps(data))


@pytest.mark.slow
def test_a_finished_run_says_where_it_stands_among_its_presets_reference_seeds(
    finished_run, tmp_path
):
    tiny_reference(tmp_path / "refs", finished_run, [1e6, 2e6, 3e6], [-1e6, -2e6, -3e6])
    text = run_summary(finished_run, None, tmp_path / "refs")
    lines = text.splitlines()
    assert lines[1].startswith("against the preset's 3 reference seeds (seeds 0–2; a tiny test")
    assert (
        lines[2].startswith("  best ")
        and "is below every one of them (lowest 1000000.0)" in lines[2]
    )
    assert (
        lines[3].startswith("  return at 1,800 samples ") and "above every one of them" in lines[3]
    )
    assert lines[4] == f"  a run's outcome varies by seed and by CPU: {references.SEEDS_DOC}"
    # no reference of its budget, no comparison
    assert "reference seeds" not in run_summary(finished_run, None, tmp_path / "none")


def test_the_learning_curve_draws_the_reference_band_behind_the_run():
    reference = references.Reference(
        "hopper-quick",
        "small",
        10_000,
        "tests",
        (0, 1, 2),
        np.array([1.0, 2.0, 3.0]),
        np.array([1.0, 2.0, 3.0]),
        references.pd.DataFrame(
            {"samples": [5_000, 10_000], "q25": [0.0, 1.0], "median": [1.0, 2.0], "q75": [2.0, 3.0]}
        ),
    )
    ax = Figure().subplots()
    draw_reference(ax, reference)
    labels = [artist.get_label() for artist in (*ax.collections, *ax.lines)]
    assert labels == ["reference seeds 0–2: IQR", "reference seeds 0–2: median"]
    assert list(ax.lines[0].get_ydata()) == [1.0, 2.0]


def test_where_no_trained_policy_beat_the_untrained_one_the_summary_and_the_curve_say_so(
    tmp_path, monkeypatch
):
    """One meaning of "best": the best evaluation of a trained policy, in the summary and in the
    curve's steps; the untrained policy's return is a line of its own, not a best."""
    from rp1.report import run_curve

    shown = []
    monkeypatch.setattr(run_curve, "save", lambda figure, path: shown.append(figure) or path)
    for first, trained, beaten in ((100.0, [-50.0, 20.0], False), (0.0, [10.0, 30.0], True)):
        root = tmp_path / str(first)
        run = write_run(root, "hopper", "quick", 0, [0, 1_000, 2_000], [first, *trained])
        line = run_summary(run, None).splitlines()[0]
        assert line.startswith("best evaluation return ")
        assert line.endswith(": no trained policy beat the untrained one") != beaten, line
        write_learning_curve(run, "hopper-quick", tmp_path / "no references")
        lines = {line.get_label(): line for line in shown[-1].axes[0].lines}
        assert list(lines["untrained policy"].get_ydata()) == [first, first]
        assert list(lines["best trained so far"].get_ydata()) == [trained[0], max(trained)]


def test_the_shipped_references_read_back_and_name_their_preset():
    shipped = sorted(references.REFERENCES.glob("*.json"))
    assert {path.stem for path in shipped} >= {"halfcheetah-quick-10000", "hopper-quick-10000"}
    for path in shipped:
        reference = read_reference(path)
        assert path.stem == f"{reference.preset}-{reference.budget}" and len(reference.seeds) >= 10


# --- a reference that cannot be read: one warning, the run's files as without it ------------------

SHIPPED = Path(__file__).resolve().parents[1] / "trained" / "halfcheetah-first-seed0"
"""A finished run of halfcheetah-first to 10,000 samples, whose preset ships a reference of that
budget (README's first command's seed 0)."""

DAMAGES = {
    "not JSON": b'{"preset": "hopper-quick", "seeds": [0, 1',
    "of the wrong shape": json.dumps({"preset": "hopper-quick", "seeds": 5}).encode(),
    "not text": b"\xff\xfe\x00",
}


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_reference_that_cannot_be_read_is_left_out_with_one_warning_naming_it(
    damage, tmp_path, monkeypatch, capsys
):
    monkeypatch.setattr(references, "WARNED", set(), raising=False)
    damaged = tmp_path / "hopper-quick-7000.json"
    damaged.write_bytes(DAMAGES[damage])
    config = {"preset": "hopper-quick", "scale": "small", "budget": 7000}
    assert reference_for(config, tmp_path) is None
    assert reference_for(config, tmp_path) is None  # the summary reads it after the curve
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"rp1: warning: reference {damaged} is "), err
    assert "not readable" in err[0] or "damaged" in err[0]


def test_a_damaged_reference_leaves_the_runs_curve_and_summary_as_without_it(
    tmp_path, monkeypatch, capsys
):
    """What ``rp1 train`` and a sweep's run do at their end, with their preset's reference file
    damaged: the learning curve and the summary as without a reference, one warning line."""
    monkeypatch.setattr(references, "WARNED", set(), raising=False)
    run = Path(shutil.copytree(SHIPPED, tmp_path / "run"))
    (run / CURVE).unlink()
    damaged = tmp_path / "refs" / "halfcheetah-first-10000.json"
    damaged.parent.mkdir()
    damaged.write_bytes(DAMAGES["not JSON"])
    curve = write_learning_curve(run, "halfcheetah-first", damaged.parent)
    summary = run_summary(run, curve, damaged.parent)
    assert curve == run / CURVE and curve.is_file()
    assert summary.splitlines()[0].startswith("best evaluation return ")
    assert "reference seeds" not in summary and summary.endswith(f"learning curve: {curve}")
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"rp1: warning: reference {damaged} is "), err


@pytest.mark.slow  # the session's finished run, resumed to its end: a tiny program compiled
def test_rp1_train_ends_with_its_curve_and_exit_0_when_its_reference_is_damaged(
    copied_run, tmp_path, monkeypatch, capsys
):
    """The package's reference of the run's preset and budget damaged: ``rp1 train`` finishes the
    run (here the session's run, its finished marker removed, resumed to its end), writes its
    learning curve and summary, warns once and exits 0."""
    monkeypatch.setattr(references, "WARNED", set(), raising=False)
    damaged = tmp_path / "damaged.json"
    damaged.write_text('{"preset": ')
    monkeypatch.setattr(references, "reference_path", lambda directory, preset, budget: damaged)
    (copied_run / "finished").unlink()
    (copied_run / CURVE).unlink()
    args = [a for a in train_args(copied_run, "--resume") if a != "--quiet"]
    code, out, err = run_cli_output(args, capsys)
    assert code == 0, err
    assert (copied_run / "finished").is_file() and (copied_run / CURVE).is_file()
    (warning,) = [line for line in err if str(damaged) in line]
    assert warning.startswith(f"rp1: warning: reference {damaged} is not readable: ")
    assert out.splitlines()[-1] == f"learning curve: {copied_run / CURVE}"
