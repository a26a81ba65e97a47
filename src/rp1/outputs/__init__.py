"""What a run writes beside its metrics and checkpoint (:mod:`rp1.outputs.writer`): the kept
policies, videos of its best policies (:mod:`rp1.outputs.video`) and a TensorBoard log
(:mod:`rp1.outputs.tensorboard_log`)."""
