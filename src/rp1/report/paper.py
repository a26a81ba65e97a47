"""The paper's numbers (algorithm.md §8), in one place, for the report to print beside ours; the methods' names
and labels are :data:`rp1.config.methods.METHOD_TABLE`'s."""

from __future__ import annotations

from rp1.config.methods import GREEDY, RP1, RP1_NOADAPT, RP1_NOPCA, RP1_STATEVAR, VR

TASKS: tuple[str, ...] = ("halfcheetah", "ant", "swimmer", "hopper")
"""Task order of the paper's tables."""

PAPER_LAMBDA_DIRECTION: dict[str, int] = {"halfcheetah": 1, "ant": 1, "swimmer": 1, "hopper": -1}
"""Sign of the relation between λ and RP1's one-step improvement that the paper reads from its
Figure 2 (Experiments section): a greater focus on uncertainty goes with faster learning on
HalfCheetah, Swimmer and Ant, the opposite on Hopper."""

PAPER_MEDIANS: dict[tuple[str, str, int], float] = {
    # (task, method, samples) -> median best evaluation return over 10 seeds (Tables 1-3).
    ("halfcheetah", GREEDY, 10_000): -0.95,
    ("halfcheetah", VR, 10_000): -1.1,
    ("halfcheetah", RP1, 10_000): 100.51,
    ("ant", GREEDY, 10_000): 94.72,
    ("ant", VR, 10_000): 95.07,
    ("ant", RP1, 10_000): 113.63,
    ("swimmer", GREEDY, 10_000): 1.08,
    ("swimmer", VR, 10_000): 1.07,
    ("swimmer", RP1, 10_000): 3.24,
    ("hopper", GREEDY, 10_000): 76.5,
    ("hopper", VR, 10_000): 139.03,
    ("hopper", RP1, 10_000): 322.22,
    ("halfcheetah", GREEDY, 100_000): 260.92,
    ("halfcheetah", VR, 100_000): 283.27,
    ("halfcheetah", RP1, 100_000): 390.49,
    ("ant", GREEDY, 100_000): 186.36,
    ("ant", VR, 100_000): 217.08,
    ("ant", RP1, 100_000): 238.4,
    ("swimmer", GREEDY, 100_000): 61.76,
    ("swimmer", VR, 100_000): 62.89,
    ("swimmer", RP1, 100_000): 64.19,
    ("hopper", GREEDY, 100_000): 487.25,
    ("hopper", VR, 100_000): 570.09,
    ("hopper", RP1, 100_000): 619.73,
    ("halfcheetah", RP1_STATEVAR, 100_000): 319.41,
    ("ant", RP1_STATEVAR, 100_000): 214.33,
    ("swimmer", RP1_STATEVAR, 100_000): 63.47,
    ("hopper", RP1_STATEVAR, 100_000): 549.19,
    ("halfcheetah", RP1_NOADAPT, 100_000): 319.14,
    ("ant", RP1_NOADAPT, 100_000): 223.21,
    ("swimmer", RP1_NOADAPT, 100_000): 41.14,
    ("hopper", RP1_NOADAPT, 100_000): 603.52,
    ("halfcheetah", RP1_NOPCA, 100_000): 247.82,
    ("ant", RP1_NOPCA, 100_000): 197.95,
    ("swimmer", RP1_NOPCA, 100_000): 41.04,
    ("hopper", RP1_NOPCA, 100_000): 595.77,
}

PAPER_T: dict[tuple[str, int, str, str], tuple[float, bool]] = {
    # (task, samples, method a, method b) -> (Welch t of a vs b, significant at p < 0.05) (Table 1).
    ("halfcheetah", 10_000, RP1, GREEDY): (5.39, True),
    ("halfcheetah", 10_000, RP1, VR): (4.34, True),
    ("ant", 10_000, RP1, GREEDY): (4.02, True),
    ("ant", 10_000, RP1, VR): (3.08, True),
    ("swimmer", 10_000, RP1, GREEDY): (1.2, False),
    ("swimmer", 10_000, RP1, VR): (1.98, False),
    ("hopper", 10_000, RP1, GREEDY): (4.32, True),
    ("hopper", 10_000, RP1, VR): (3.42, True),
    ("halfcheetah", 100_000, RP1, GREEDY): (3.89, True),
    ("halfcheetah", 100_000, RP1, VR): (2.62, True),
    ("ant", 100_000, RP1, GREEDY): (3.83, True),
    ("ant", 100_000, RP1, VR): (3.11, True),
    ("swimmer", 100_000, RP1, GREEDY): (-0.11, False),
    ("swimmer", 100_000, RP1, VR): (-1.09, False),
    ("hopper", 100_000, RP1, GREEDY): (3.52, True),
    ("hopper", 100_000, RP1, VR): (2.21, False),
}
