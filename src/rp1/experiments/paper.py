"""The paper's numbers (algorithm.md §8), in one place, for the report to print beside ours; the methods' names
and labels are :data:`rp1.config.methods.METHOD_TABLE`'s."""

from __future__ import annotations

TASKS: tuple[str, ...] = ("halfcheetah", "ant", "swimmer", "hopper")
"""Task order of the paper's tables."""

PAPER_LAMBDA_DIRECTION: dict[str, int] = {"halfcheetah": 1, "ant": 1, "swimmer": 1, "hopper": -1}
"""Sign of the relation between λ and RP1's one-step improvement that the paper reads from its
Figure 2 (Experiments section): a greater focus on uncertainty goes with faster learning on
HalfCheetah, Swimmer and Ant, the opposite on Hopper."""

PAPER_MEDIANS: dict[tuple[str, str, int], float] = {
    # (task, method, samples) -> median best evaluation return over 10 seeds (Tables 1-3).
    ("halfcheetah", "greedy", 10_000): -0.95,
    ("halfcheetah", "vr", 10_000): -1.1,
    ("halfcheetah", "rp1", 10_000): 100.51,
    ("ant", "greedy", 10_000): 94.72,
    ("ant", "vr", 10_000): 95.07,
    ("ant", "rp1", 10_000): 113.63,
    ("swimmer", "greedy", 10_000): 1.08,
    ("swimmer", "vr", 10_000): 1.07,
    ("swimmer", "rp1", 10_000): 3.24,
    ("hopper", "greedy", 10_000): 76.5,
    ("hopper", "vr", 10_000): 139.03,
    ("hopper", "rp1", 10_000): 322.22,
    ("halfcheetah", "greedy", 100_000): 260.92,
    ("halfcheetah", "vr", 100_000): 283.27,
    ("halfcheetah", "rp1", 100_000): 390.49,
    ("ant", "greedy", 100_000): 186.36,
    ("ant", "vr", 100_000): 217.08,
    ("ant", "rp1", 100_000): 238.4,
    ("swimmer", "greedy", 100_000): 61.76,
    ("swimmer", "vr", 100_000): 62.89,
    ("swimmer", "rp1", 100_000): 64.19,
    ("hopper", "greedy", 100_000): 487.25,
    ("hopper", "vr", 100_000): 570.09,
    ("hopper", "rp1", 100_000): 619.73,
    ("halfcheetah", "rp1-statevar", 100_000): 319.41,
    ("ant", "rp1-statevar", 100_000): 214.33,
    ("swimmer", "rp1-statevar", 100_000): 63.47,
    ("hopper", "rp1-statevar", 100_000): 549.19,
    ("halfcheetah", "rp1-noadapt", 100_000): 319.14,
    ("ant", "rp1-noadapt", 100_000): 223.21,
    ("swimmer", "rp1-noadapt", 100_000): 41.14,
    ("hopper", "rp1-noadapt", 100_000): 603.52,
    ("halfcheetah", "rp1-nopca", 100_000): 247.82,
    ("ant", "rp1-nopca", 100_000): 197.95,
    ("swimmer", "rp1-nopca", 100_000): 41.04,
    ("hopper", "rp1-nopca", 100_000): 595.77,
}

PAPER_T: dict[tuple[str, int, str, str], tuple[float, bool]] = {
    # (task, samples, method a, method b) -> (Welch t of a vs b, significant at p < 0.05) (Table 1).
    ("halfcheetah", 10_000, "rp1", "greedy"): (5.39, True),
    ("halfcheetah", 10_000, "rp1", "vr"): (4.34, True),
    ("ant", 10_000, "rp1", "greedy"): (4.02, True),
    ("ant", 10_000, "rp1", "vr"): (3.08, True),
    ("swimmer", 10_000, "rp1", "greedy"): (1.2, False),
    ("swimmer", 10_000, "rp1", "vr"): (1.98, False),
    ("hopper", 10_000, "rp1", "greedy"): (4.32, True),
    ("hopper", 10_000, "rp1", "vr"): (3.42, True),
    ("halfcheetah", 100_000, "rp1", "greedy"): (3.89, True),
    ("halfcheetah", 100_000, "rp1", "vr"): (2.62, True),
    ("ant", 100_000, "rp1", "greedy"): (3.83, True),
    ("ant", 100_000, "rp1", "vr"): (3.11, True),
    ("swimmer", 100_000, "rp1", "greedy"): (-0.11, False),
    ("swimmer", 100_000, "rp1", "vr"): (-1.09, False),
    ("hopper", 100_000, "rp1", "greedy"): (3.52, True),
    ("hopper", 100_000, "rp1", "vr"): (2.21, False),
}
