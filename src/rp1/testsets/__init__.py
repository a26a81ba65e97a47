"""``rp1 testsets``: the world models' test sets (:mod:`rp1.dynamics.testset`) built from shipped
policies (:mod:`~rp1.testsets.build`) and compared with the shipped files byte for byte
(:mod:`~rp1.testsets.rebuilt`).
"""
