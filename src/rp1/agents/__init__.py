"""The agents a run drives (:class:`~rp1.agents.protocol.Agent`): every model-based method of the
method table (:mod:`rp1.agents.model_based`) and PPO in the real environment
(:mod:`rp1.agents.modelfree`). A policy as its agent evaluates it is
:mod:`rp1.realenv.snapshots`; the files that keep it are :mod:`rp1.rundir.policy_files`."""
