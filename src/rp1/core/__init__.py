"""Small pieces every layer shares: the MLP (:mod:`rp1.core.nn`), random streams and seeds
(:mod:`rp1.core.seeding`), rp1's error types (:mod:`rp1.core.errors`), files written atomically
and read with their errors named (:mod:`rp1.core.storage`) and JAX's persistent compilation cache
(:mod:`rp1.core.compilation`)."""
