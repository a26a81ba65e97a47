"""Each run records where it ran; a resume in another environment continues, warns in
one line and records from which iteration the new environment applies."""

from __future__ import annotations

import json
import os

import jax
import pytest

from helpers import Crash, crash_after_steps, train_args
from rp1.cli import main
from rp1.rundir.files import ENVIRONMENT
from rp1.rundir.provenance import PACKAGES, cpu_features, environment, record, xla_threads


def entries(run_dir) -> list[dict]:
    return json.loads((run_dir / ENVIRONMENT).read_text())["environments"]


def test_xla_threads_follow_xlas_own_rule():
    assert xla_threads({"PJRT_NPROC": "3", "NPROC": "5"}) == 3
    assert xla_threads({"NPROC": "5"}) == 5
    assert xla_threads({"PJRT_NPROC": "many"}) == len(os.sched_getaffinity(0))
    assert xla_threads({}) == len(os.sched_getaffinity(0))


def test_environment_names_what_the_numbers_depend_on():
    env = environment()
    assert set(env) == {
        "rp1",
        "commit",
        "python",
        *PACKAGES,
        "backend",
        "device",
        "cpu_features",
        "xla_threads",
        "xla_flags",
        "openblas_coretype",
    }
    assert (
        env["backend"] == jax.default_backend()
        and env["device"]
        and env["xla_threads"] == xla_threads()
    )
    assert env["cpu_features"] == cpu_features()  # on a GPU too: NumPy's arithmetic runs on the CPU
    assert env["commit"] == "unknown" or len(env["commit"].split("-")[0]) == 40


X86 = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC
flags\t\t: fpu sse sse2 ht pni ssse3 fma sse4_1 sse4_2 aes avx sme avx2 avx512f avx512bw avx512_bf16 bmi2 avx_vnni amx_tile
processor\t: 1
flags\t\t: fpu sse sse2
"""
ARM = """processor\t: 0
BogoMIPS\t: 50.00
Features\t: fp asimd evtstrm aes crc32 atomics fphp asimdhp asimddp sve sve2 sme bf16 i8mm
"""


@pytest.mark.parametrize(
    ("cpuinfo", "features"),
    [
        (
            X86,
            "amx_tile avx avx2 avx512_bf16 avx512bw avx512f avx_vnni fma pni sse sse2 sse4_1 sse4_2 ssse3",
        ),
        (ARM, "asimd asimddp asimdhp bf16 fphp i8mm sme sve sve2"),
        ("processor\t: 0\n", "unknown"),
    ],
)
def test_cpu_features_are_the_vector_and_floating_point_extensions(tmp_path, cpuinfo, features):
    """The first CPU's; x86's ``sme`` (memory encryption), ``aes``, ``bmi2`` … are left out."""
    (tmp_path / "cpuinfo").write_text(cpuinfo)
    assert cpu_features(tmp_path / "cpuinfo") == features
    assert cpu_features(tmp_path / "absent") == "unknown"


def test_record_starts_keeps_and_appends(tmp_path):
    assert record(tmp_path, 0) is None
    assert [e["from_iteration"] for e in entries(tmp_path)] == [0]
    assert record(tmp_path, 4) is None  # the same environment: nothing to add
    assert len(entries(tmp_path)) == 1

    here = entries(tmp_path)[0]
    features = here["cpu_features"].split()
    elsewhere = [
        {
            **here,
            "device": "Another CPU",
            "cpu_features": " ".join([*features[1:], "avx9"]),
            "xla_threads": 64,
        }
    ]
    (tmp_path / ENVIRONMENT).write_text(json.dumps({"environments": elsewhere}))
    warning = record(tmp_path, 4)
    assert warning.startswith(
        f"rp1: warning: {tmp_path} continues from iteration 4 in another environment"
    )
    assert "device 'Another CPU' -> " in warning and f"xla_threads 64 -> {xla_threads()}" in warning
    assert f"cpu_features -avx9 +{features[0]};" in warning
    assert "\n" not in warning
    assert [(e["from_iteration"], e["device"]) for e in entries(tmp_path)] == [
        (0, "Another CPU"),
        (4, environment()["device"]),
    ]

    # resumed from an earlier checkpoint (the last resume died before its next one): its entry goes
    assert record(tmp_path, 2) is not None
    assert [e["from_iteration"] for e in entries(tmp_path)] == [0, 2]
    assert record(tmp_path, 0) is None and [e["from_iteration"] for e in entries(tmp_path)] == [0]


def test_an_entry_written_before_a_field_existed_is_read_and_differs_by_it(tmp_path):
    record(tmp_path, 0)
    older = {
        k: v for k, v in entries(tmp_path)[0].items() if k != "cpu_features"
    }  # an earlier rp1's record
    (tmp_path / ENVIRONMENT).write_text(json.dumps({"environments": [older]}))
    warning = record(tmp_path, 5)
    assert f"(cpu_features not recorded -> {cpu_features()!r}):" in warning
    assert [(e["from_iteration"], e.get("cpu_features")) for e in entries(tmp_path)] == [
        (0, None),
        (5, cpu_features()),
    ]


def test_a_run_without_a_record_is_recorded_from_its_resume(tmp_path):
    warning = record(tmp_path, 3)
    assert "no record of where iterations 0-2 ran" in warning and "from iteration 3" in warning
    assert [e["from_iteration"] for e in entries(tmp_path)] == [3]


@pytest.mark.slow
def test_a_resume_in_another_environment_warns_once_and_records_it(tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    with monkeypatch.context() as patch:
        crash_after_steps(patch, 2)
        with pytest.raises(Crash):
            main(train_args(out))
    (first,) = entries(out)
    assert first["from_iteration"] == 0 and first["xla_threads"] == xla_threads()
    (out / ENVIRONMENT).write_text(json.dumps({"environments": [{**first, "xla_threads": 99}]}))
    capsys.readouterr()

    assert main(train_args(out, "--resume")) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert (
        len(warnings) == 1
        and "from iteration 2" in warnings[0]
        and f"xla_threads 99 -> {xla_threads()}" in warnings[0]
    )
    assert [(e["from_iteration"], e["xla_threads"]) for e in entries(out)] == [
        (0, 99),
        (2, xla_threads()),
    ]
